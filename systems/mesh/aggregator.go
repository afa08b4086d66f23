package mesh

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/custody-dev/custody"
)

// maxNodesPerAggregation is the contract's limit on input nodes.
const maxNodesPerAggregation = 32

// AggregatorConfig configures an aggregator.
type AggregatorConfig struct {
	// Wire admits advisories and sends aggregations.
	Wire     *Wire
	Subjects Subjects
	// Composer words the aggregation; template when nil.
	Composer Composer
	Now      func() time.Time
	// NodePeriod is the nodes' polling period: a node silent for more than
	// three periods is stale. Default 60 s.
	NodePeriod time.Duration
	// Interval is the timer cadence. Default 60 s.
	Interval time.Duration
	// MaxNodes caps the nodes of one aggregation; default and maximum 32.
	MaxNodes int
	// ForgetAfter drops a node silent that long. Default 1 h.
	ForgetAfter time.Duration
	// NewID mints approval request ids (uuid v4); crypto/rand when nil.
	NewID func() string
	// Passive keeps the latest advisories for a view (the live map, a
	// desk's book) and never emits an aggregation.
	Passive bool
	// OnAggregation observes every aggregation sent, with its trigger
	// ("timer" or the node that triggered it).
	OnAggregation func(agg Aggregation, raw []byte, trigger string)
}

// Aggregator keeps the latest advisory of every node and emits
// aggregations on a hybrid cadence: every Interval on the timer, and at
// once for the sector of a node that newly reports critical or emergency.
type Aggregator struct {
	cfg       AggregatorConfig
	mu        sync.Mutex
	nodes     map[string]*nodeState
	sectors   map[string][]string // sector → sorted node ids
	lastTimer time.Time
	stats     AggregatorStats
}

// AggregatorStats counts what an aggregator did.
type AggregatorStats struct {
	Ingested     int64
	Refused      int64
	Aggregations int64
	Events       int64
}

type nodeState struct {
	id     string
	adv    Advisory
	seen   time.Time
	sector string
	// recent holds the node's last recentDepth advisories stored, newest
	// last: the tiers an aggregation may cite it with.
	recent []heard
}

// heard is one advisory an aggregator stored: its tier, when it was
// observed, and its receipt on the ledger.
type heard struct {
	Tier Tier
	At   time.Time
	// Seq is the seq of its mesh.message.received entry; 0 when the wire
	// records nothing.
	Seq int64
	// SHA256 is the hex SHA-256 of the message bytes: its signature
	// covers them, and its entry's body_sha256 is this digest.
	SHA256 string
}

// recentDepth is how many of a node's latest advisories an aggregator
// keeps.
const recentDepth = 4

// stale reports whether a node whose latest advisory was observed at seen
// is stale at now: silent for more than three polling periods
// (FR-T5.A.5). Exactly three periods is not stale.
func stale(seen, now time.Time, period time.Duration) bool {
	return now.Sub(seen) > 3*period
}

// NodeStatus is the aggregator's view of one node.
type NodeStatus struct {
	Advisory Advisory  `json:"advisory"`
	Seen     time.Time `json:"seen"`
	Sector   string    `json:"sector"`
	Stale    bool      `json:"stale"`
	// Tier is the node's tier after stale capping.
	Tier Tier `json:"tier"`
}

// NewAggregator returns an aggregator with defaults filled in.
func NewAggregator(cfg AggregatorConfig) *Aggregator {
	if cfg.Composer == nil {
		cfg.Composer = template{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NodePeriod <= 0 {
		cfg.NodePeriod = time.Minute
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.MaxNodes <= 0 || cfg.MaxNodes > maxNodesPerAggregation {
		cfg.MaxNodes = maxNodesPerAggregation
	}
	if cfg.ForgetAfter <= 0 {
		cfg.ForgetAfter = time.Hour
	}
	if cfg.NewID == nil {
		cfg.NewID = newUUID
	}
	return &Aggregator{cfg: cfg, nodes: make(map[string]*nodeState), sectors: make(map[string][]string), lastTimer: cfg.Now()}
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Listen subscribes the aggregator to every advisory on its wire.
func (a *Aggregator) Listen(ctx context.Context) (Subscription, error) {
	return a.cfg.Wire.Transport.Subscribe(a.cfg.Subjects.Advisories(), func(_ context.Context, m Msg) {
		_, _ = a.Receive(ctx, m)
	})
}

// Receive admits one advisory off the wire, records it as received
// (node, signer, signature and message digest in its refs), and ingests
// it with its receipt. A message that fails admission is recorded as
// refused and dropped. Admission runs outside the aggregator's lock, so
// advisories delivered on several goroutines are checked in parallel.
func (a *Aggregator) Receive(ctx context.Context, m Msg) ([]Aggregation, error) {
	adv, at, err := a.admitSigned(m)
	if err != nil {
		a.count(func(s *AggregatorStats) { s.Refused++ })
		return nil, a.cfg.Wire.Refuse(ctx, kindAdvisory, "receive", m.Subject, m.Data, signedRefs(nil, m), err)
	}
	h := heard{Tier: adv.DetectorState.Tier, At: at, SHA256: sha(m.Data)}
	refs := signedRefs(map[string]string{"node_id": adv.NodeID, refMeshKind: string(kindAdvisory), RefMessageSHA256: h.SHA256}, m)
	entry, err := a.cfg.Wire.receivedRefs(ctx, kindAdvisory, m.Subject, m.Data, refs)
	if err != nil {
		if custody.ErrorKind(err) == custody.EINVALID {
			a.count(func(s *AggregatorStats) { s.Refused++ })
		}
		return nil, err
	}
	h.Seq = entry.Seq
	return a.ingest(ctx, adv, h)
}

// admitSigned is admit of a message whose signature is checked first: it
// must be a valid signature by the roster's node of the advisory's own
// node id.
func (a *Aggregator) admitSigned(m Msg) (Advisory, time.Time, error) {
	member, err := a.cfg.Wire.verify(kindAdvisory, m)
	if err != nil {
		return Advisory{}, time.Time{}, err
	}
	adv, at, err := a.admit(m)
	if err != nil {
		return adv, at, err
	}
	if adv.NodeID != member.Name {
		return adv, at, custody.Errorf(custody.EUNAUTHORIZED, "advisory of %s is signed by node %s", adv.NodeID, member.Name)
	}
	return adv, at, nil
}

// admit checks an advisory off the wire: size and contract, then that it
// came on its node's subject, that its detector state is what the rule
// gives for its own reading, that its text passes the guard, and that it
// is not from the future. It returns the advisory and its observation
// time.
func (a *Aggregator) admit(m Msg) (Advisory, time.Time, error) {
	// Wire.Check, whose number check admitAdvisory makes as it decodes.
	if err := a.cfg.Wire.checkContract(kindAdvisory, m.Data); err != nil {
		return Advisory{}, time.Time{}, err
	}
	adv, err := admitAdvisory(m.Data)
	if err != nil {
		return adv, time.Time{}, err
	}
	at, err := a.checkAdvisory(m.Subject, adv)
	return adv, at, err
}

func (a *Aggregator) checkAdvisory(subject string, adv Advisory) (time.Time, error) {
	if subject != "" && lastToken(subject) != adv.NodeID {
		return time.Time{}, custody.Errorf(custody.EINVALID, "advisory of %s arrived on %s", adv.NodeID, subject)
	}
	// The rule runs again on the advisory's own reading and conditions:
	// the tier it gives must be the one the advisory carries.
	var want Tier
	var as Assessment
	if adv.DetectorState.RuleSignature == ruleSignature {
		as = assess(adv.SensorReading, conditionsOf(adv))
		want = as.State.Tier
	}
	if want == "" || want != adv.DetectorState.Tier {
		return time.Time{}, custody.Errorf(custody.EINVALID, "advisory of %s says %q but rule %s gives %q for its reading", adv.NodeID, adv.DetectorState.Tier, ruleSignature, want)
	}
	if err := advisoryCheck(as, maxMessageBytes)(adv.AdvisoryText); err != nil {
		return time.Time{}, err
	}
	at, err := time.Parse(time.RFC3339, adv.ObservationTS)
	if err != nil {
		return time.Time{}, custody.Errorf(custody.EINVALID, "advisory of %s: observation_ts %q is not RFC 3339", adv.NodeID, adv.ObservationTS)
	}
	if at.After(a.cfg.Now().Add(5 * time.Minute)) {
		return time.Time{}, custody.Errorf(custody.EINVALID, "advisory of %s is from the future (%s)", adv.NodeID, adv.ObservationTS)
	}
	return at, nil
}

func conditionsOf(adv Advisory) Conditions {
	return Conditions{RFWActive: adv.DetectorState.RFWActive, WFIGSProximityKM: adv.DetectorState.WFIGSProximityKM}
}

func (a *Aggregator) count(f func(*AggregatorStats)) {
	a.mu.Lock()
	f(&a.stats)
	a.mu.Unlock()
}

// ingest keeps adv, heard as h, as its node's latest advisory (an older
// one than the latest is ignored) and, when the node newly reports
// critical or emergency, emits the aggregation of its group at once.
func (a *Aggregator) ingest(ctx context.Context, adv Advisory, h heard) ([]Aggregation, error) {
	a.mu.Lock()
	a.stats.Ingested++
	_, trigger := a.store(adv, h)
	var group []NodeStatus
	if trigger {
		a.stats.Events++
		group = a.groupOf(adv.NodeID)
	}
	a.mu.Unlock()
	if !trigger || a.cfg.Passive {
		return nil, nil
	}
	return a.emit(ctx, group, adv.NodeID)
}

// store saves adv, heard as h, and reports whether it newly raises the
// node to critical or above. Called with a.mu held.
func (a *Aggregator) store(adv Advisory, h heard) (Tier, bool) {
	at := h.At
	st, ok := a.nodes[adv.NodeID]
	if ok && at.Before(st.seen) {
		return st.adv.DetectorState.Tier, false
	}
	prev := Info
	if ok {
		prev = st.adv.DetectorState.Tier
		if stale(st.seen, a.cfg.Now(), a.cfg.NodePeriod) {
			prev = prev.Cap(Warning)
		}
	} else {
		// The node's own copy of its id, which the map and its sector
		// keep: adv's strings share one allocation (see admitAdvisory).
		st = &nodeState{id: strings.Clone(adv.NodeID)}
		a.nodes[st.id] = st
	}
	if !ok || adv.Position.MGRS != st.adv.Position.MGRS {
		a.placeSector(st, sector(adv.Position.MGRS))
	}
	st.adv, st.seen = adv, at
	now := adv.DetectorState.Tier
	if len(st.recent) == recentDepth {
		st.recent = append(st.recent[:0], st.recent[1:]...)
	}
	st.recent = append(st.recent, h)
	return prev, now.Rank() >= Critical.Rank() && now.Rank() > prev.Rank()
}

// placeSector files the node of st under sector. Called with a.mu held.
func (a *Aggregator) placeSector(st *nodeState, sector string) {
	if st.sector != sector {
		a.moveSector(st.id, st.sector, sector)
		st.sector = sector
	}
}

func (a *Aggregator) moveSector(id, from, to string) {
	if from != "" {
		ids := a.sectors[from]
		if i, ok := slices.BinarySearch(ids, id); ok {
			a.sectors[from] = slices.Delete(ids, i, i+1)
		}
	}
	ids := a.sectors[to]
	i, _ := slices.BinarySearch(ids, id)
	a.sectors[to] = slices.Insert(ids, i, id)
}

// Tick emits the aggregations of every group when Interval has passed
// since the last timed aggregation; otherwise it does nothing.
func (a *Aggregator) Tick(ctx context.Context) ([]Aggregation, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	if now.Sub(a.lastTimer) < a.cfg.Interval || a.cfg.Passive {
		a.mu.Unlock()
		return nil, nil
	}
	a.lastTimer = now
	a.forget(now)
	groups := a.allGroups()
	a.mu.Unlock()
	var out []Aggregation
	for _, g := range groups {
		aggs, err := a.emit(ctx, g, "timer")
		out = append(out, aggs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Run ticks every `every` of real time until ctx ends.
func (a *Aggregator) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			_, _ = a.Tick(ctx)
		}
	}
}

// forget drops nodes silent longer than ForgetAfter. Called with a.mu held.
func (a *Aggregator) forget(now time.Time) {
	for id, st := range a.nodes {
		if now.Sub(st.seen) > a.cfg.ForgetAfter {
			ids := a.sectors[st.sector]
			if i, ok := slices.BinarySearch(ids, id); ok {
				a.sectors[st.sector] = slices.Delete(ids, i, i+1)
			}
			delete(a.nodes, id)
		}
	}
}

// Nodes returns the aggregator's view of every node, by id.
func (a *Aggregator) Nodes() []NodeStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.cfg.Now()
	out := make([]NodeStatus, 0, len(a.nodes))
	for _, st := range a.nodes {
		out = append(out, a.status(st, now))
	}
	slices.SortFunc(out, func(x, y NodeStatus) int { return cmpString(x.Advisory.NodeID, y.Advisory.NodeID) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// status is the view of one node at now, with stale capping. Called with
// a.mu held.
func (a *Aggregator) status(st *nodeState, now time.Time) NodeStatus {
	silent := stale(st.seen, now, a.cfg.NodePeriod)
	tier := st.adv.DetectorState.Tier
	if silent {
		tier = tier.Cap(Warning)
	}
	return NodeStatus{Advisory: st.adv, Seen: st.seen, Sector: st.sector, Stale: silent, Tier: tier}
}

// groupOf returns the group (sector chunk of at most MaxNodes) holding
// node id. Called with a.mu held.
func (a *Aggregator) groupOf(id string) []NodeStatus {
	sector := a.nodes[id].sector
	ids := a.sectors[sector]
	i, _ := slices.BinarySearch(ids, id)
	lo := i / a.cfg.MaxNodes * a.cfg.MaxNodes
	return a.statuses(ids[lo:min(lo+a.cfg.MaxNodes, len(ids))], a.cfg.Now())
}

// allGroups returns every group of every sector, sectors in order.
// Called with a.mu held.
func (a *Aggregator) allGroups() [][]NodeStatus {
	names := make([]string, 0, len(a.sectors))
	for s, ids := range a.sectors {
		if len(ids) > 0 {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	now := a.cfg.Now()
	var out [][]NodeStatus
	for _, s := range names {
		ids := a.sectors[s]
		for lo := 0; lo < len(ids); lo += a.cfg.MaxNodes {
			out = append(out, a.statuses(ids[lo:min(lo+a.cfg.MaxNodes, len(ids))], now))
		}
	}
	return out
}

func (a *Aggregator) statuses(ids []string, now time.Time) []NodeStatus {
	out := make([]NodeStatus, len(ids))
	for i, id := range ids {
		out[i] = a.status(a.nodes[id], now)
	}
	return out
}

// emit builds, checks and sends the aggregations of one group (one, or
// more when the group cannot fit maxMessageBytes).
func (a *Aggregator) emit(ctx context.Context, group []NodeStatus, trigger string) ([]Aggregation, error) {
	built, err := a.build(ctx, group)
	if err != nil {
		return nil, err
	}
	out := make([]Aggregation, 0, len(built))
	for _, b := range built {
		subject := a.cfg.Subjects.Aggregation(b.sector)
		if err := a.cfg.Wire.Send(ctx, kindAggregation, subject, b.raw, map[string]string{RefApproval: b.agg.ApprovalRequestID}); err != nil {
			return out, err
		}
		a.count(func(s *AggregatorStats) { s.Aggregations++ })
		if a.cfg.OnAggregation != nil {
			a.cfg.OnAggregation(b.agg, b.raw, trigger)
		}
		out = append(out, b.agg)
	}
	return out, nil
}

// recentHeard returns node id's latest advisories, newest last, and
// whether the aggregator holds any of the node.
func (a *Aggregator) recentHeard(id string) ([]heard, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.nodes[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(st.recent), true
}

// period returns the nodes' polling period the aggregator judges
// staleness by.
func (a *Aggregator) period() time.Duration { return a.cfg.NodePeriod }

// changed returns a count that moves each time an advisory is ingested.
func (a *Aggregator) changed() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats.Ingested
}

// Transport returns the transport the aggregator listens on.
func (a *Aggregator) Transport() Transport { return a.cfg.Wire.Transport }
