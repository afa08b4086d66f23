package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
)

// broadcastTool is the action an operator approves: the approval's tool
// name, bound with the order by the approval digest.
const broadcastTool = "mesh_broadcast"

// Approvals is the part of the approval service the desk uses;
// *approval.Service implements it.
type Approvals interface {
	Request(ctx context.Context, r approval.Request) (custody.Approval, error)
	Decide(ctx context.Context, id string, d approval.Decision) (custody.Approval, error)
	Get(ctx context.Context, id string) (custody.Approval, error)
}

var _ Approvals = (*approval.Service)(nil)

// order is what an operator approves: the approval's arguments. Its
// members are strings so that an operator may edit each of them (the
// audiences as a comma-separated list) and the digest binds the edit.
type order struct {
	BroadcastText  string `json:"broadcast_text"`
	SeverityTier   Tier   `json:"severity_tier"`
	TargetAudience string `json:"target_audience"`
	// OperatorEdit records, as the operator's, what they changed in the
	// proposed text (the aggregation's): the edit from it to
	// BroadcastText in wdiff form (textEdit.String), "" when none is
	// recorded. The decision entry carries it among the approved
	// arguments; a claim the aggregation does not hold may be broadcast
	// only when it records that the operator wrote it.
	OperatorEdit string `json:"operator_edit"`
}

// orderEditable names the order members an operator may edit.
var orderEditable = []string{"broadcast_text", "severity_tier", "target_audience", "operator_edit"}

// Audiences returns the order's audiences.
func (o order) Audiences() []string {
	var out []string
	for _, a := range strings.Split(o.TargetAudience, ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Case statuses on the desk.
const (
	CaseInfo      = "info"      // no approval: can never become a broadcast
	CasePending   = "pending"   // waiting for an operator
	CaseDeclined  = "declined"  // the operator declined
	CaseExpired   = "expired"   // nobody decided in time
	CaseBroadcast = "broadcast" // approved and published
	CaseRefused   = "refused"   // approved, but the order failed its checks
	CaseHeld      = "held"      // an approval for the same nodes at this tier or above is already waiting
)

// Case is one aggregation on the desk and what became of it.
type Case struct {
	Aggregation Aggregation `json:"aggregation"`
	Status      string      `json:"status"`
	Broadcast   *Broadcast  `json:"broadcast,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Received    time.Time   `json:"received"`
}

// DeskConfig configures an operator desk.
type DeskConfig struct {
	Wire      *Wire
	Subjects  Subjects
	Approvals Approvals
	Now       func() time.Time
	// TTL is how long an approval waits; the service default when zero.
	TTL time.Duration
	// Audiences are proposed in the draft order; ops_center when empty.
	Audiences []string
	// Keep bounds the cases kept for the map; default 256.
	Keep int
	// OnBroadcast observes every broadcast published.
	OnBroadcast func(Broadcast)
	// Book holds the advisories the desk has seen itself, each admitted
	// as the aggregator admits it (signature, roster, rule, guard) and
	// recorded on the desk's ledger; every aggregation is checked against
	// it. A passive aggregator on Wire when nil.
	Book *Aggregator
	// NodePeriod is the nodes' polling period: the desk judges a node
	// stale, whatever the aggregation says, when by Now its latest
	// advisory was observed more than three periods ago. The Book's when
	// zero and a Book is given, else 30 s (custody mesh node --period).
	NodePeriod time.Duration
	// AdvisoryWait is how long an aggregation citing an advisory the
	// desk has not seen yet waits for it (advisories and aggregations
	// arrive on different streams); default 2 s.
	AdvisoryWait time.Duration
}

// defaultNodePeriod is the nodes' polling period a desk assumes when told
// none: the default of custody mesh node --period.
const defaultNodePeriod = 30 * time.Second

// deskOperator is the operator id under which the desk itself declines
// the approval request of an aggregation it never puts to an operator.
const deskOperator = "mesh-desk"

// Desk is the ops side of the mesh: it admits aggregations, opens an
// approval for every one at warning or above, and publishes a broadcast
// only for an approved order that passes every check.
type Desk struct {
	cfg   DeskConfig
	mu    sync.Mutex
	cases map[string]*Case
	order []string
}

// NewDesk returns a desk with defaults filled in.
func NewDesk(cfg DeskConfig) *Desk {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Audiences) == 0 {
		cfg.Audiences = []string{"ops_center"}
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 256
	}
	if cfg.AdvisoryWait <= 0 {
		cfg.AdvisoryWait = 2 * time.Second
	}
	if cfg.NodePeriod <= 0 {
		cfg.NodePeriod = defaultNodePeriod
		if cfg.Book != nil {
			cfg.NodePeriod = cfg.Book.period()
		}
	}
	if cfg.Book == nil {
		cfg.Book = NewAggregator(AggregatorConfig{Wire: cfg.Wire, Subjects: cfg.Subjects, Now: cfg.Now, NodePeriod: cfg.NodePeriod, Passive: true})
	}
	return &Desk{cfg: cfg, cases: make(map[string]*Case)}
}

// Book returns the passive aggregator holding the advisories the desk
// has seen.
func (d *Desk) Book() *Aggregator { return d.cfg.Book }

// Listen subscribes the desk's book to every advisory, then the desk to
// every aggregation on its wire. The subscription returned stops both.
func (d *Desk) Listen(ctx context.Context) (Subscription, error) {
	book, err := d.cfg.Book.Listen(ctx)
	if err != nil {
		return nil, err
	}
	aggs, err := d.cfg.Wire.Transport.Subscribe(d.cfg.Subjects.Aggregations(), func(_ context.Context, m Msg) {
		_ = d.Receive(ctx, m)
	})
	if err != nil {
		_ = book.Unsubscribe()
		return nil, err
	}
	return bothSubs{book, aggs}, nil
}

type bothSubs [2]Subscription

func (b bothSubs) Unsubscribe() error {
	err := b[0].Unsubscribe()
	if err2 := b[1].Unsubscribe(); err == nil {
		err = err2
	}
	return err
}

// Receive admits one aggregation off the wire, records it with the
// advisory entries it was checked against (see basis.refs), and opens its
// approval when it is at warning or above. A message that fails is
// recorded as refused.
func (d *Desk) Receive(ctx context.Context, m Msg) error {
	agg, b, err := d.admitSigned(ctx, m)
	refs := signedRefs(nil, m)
	if err != nil {
		return d.cfg.Wire.Refuse(ctx, kindAggregation, "receive", m.Subject, m.Data, refs, err)
	}
	refs[RefApproval] = agg.ApprovalRequestID
	if err := d.cfg.Wire.Received(ctx, kindAggregation, m.Subject, m.Data, b.refs(refs)); err != nil {
		return err
	}
	return d.open(ctx, agg, m.Data)
}

func (d *Desk) admit(raw []byte) (Aggregation, error) {
	var agg Aggregation
	if err := d.cfg.Wire.Check(kindAggregation, raw); err != nil {
		return agg, err
	}
	if err := json.Unmarshal(raw, &agg); err != nil {
		return agg, &custody.Error{Kind: custody.EINVALID, Message: "aggregation does not decode", Err: err}
	}
	if err := checkAggregation(agg); err != nil {
		return agg, err
	}
	d.mu.Lock()
	_, dup := d.cases[agg.ApprovalRequestID]
	d.mu.Unlock()
	if dup {
		return agg, custody.Errorf(custody.ECONFLICT, "aggregation %s was already received", agg.ApprovalRequestID)
	}
	return agg, nil
}

// admitSigned admits an aggregation signed by the roster's aggregator
// whose inputs the desk's own book bears out (see checkInputs), and
// returns what it was checked against.
func (d *Desk) admitSigned(ctx context.Context, m Msg) (Aggregation, basis, error) {
	if _, err := d.cfg.Wire.verify(kindAggregation, m); err != nil {
		return Aggregation{}, basis{}, err
	}
	agg, err := d.admit(m.Data)
	if err != nil {
		return agg, basis{}, err
	}
	// A desk that restarted holds no cases, but the approvals remain: a
	// replayed or redelivered aggregation is refused, not filed twice.
	if _, err := d.cfg.Approvals.Get(ctx, agg.ApprovalRequestID); err == nil {
		return agg, basis{}, custody.Errorf(custody.ECONFLICT, "aggregation %s was already filed", agg.ApprovalRequestID)
	}
	b, err := d.awaitInputs(agg)
	return agg, b, err
}

// checkAggregation checks what the desk can check without the advisories:
// input ids are unique, stale ids are inputs, and the text cites only
// inputs with tiers no higher than the severity allows.
func checkAggregation(agg Aggregation) error {
	seen := make(map[string]bool, len(agg.InputNodeIDs))
	for _, id := range agg.InputNodeIDs {
		if seen[id] {
			return custody.Errorf(custody.EINVALID, "aggregation lists node %s twice", id)
		}
		seen[id] = true
	}
	for _, id := range agg.StaleNodeIDs {
		if !seen[id] {
			return custody.Errorf(custody.EINVALID, "stale node %s is not an input", id)
		}
	}
	return citedOnlyInputs(agg.AggregationText, seen)
}

var nodeMentionRE = regexp.MustCompile(`forward-[A-Za-z0-9-]*[A-Za-z0-9]`)

// nodeMentions returns the node ids a text names.
func nodeMentions(text string) []string { return nodeMentionRE.FindAllString(text, -1) }

func citedOnlyInputs(text string, inputs map[string]bool) error {
	for _, id := range nodeMentions(text) {
		if !inputs[id] {
			return custody.Errorf(custody.EINVALID, "aggregation text names node %s that is not an input", id)
		}
	}
	return nil
}

// open files the case and, at warning or above, the approval request.
//
// Every aggregation's approval_request_id names a real approval, as the
// seed threads it aggregation → broadcast → ledger: one the desk does not
// put to an operator (info, or held) is requested and declined by the
// desk at once, saying why.
func (d *Desk) open(ctx context.Context, agg Aggregation, raw []byte) error {
	c := &Case{Aggregation: agg, Status: CaseInfo, Received: d.cfg.Now()}
	d.keep(c)
	if agg.SeverityTier.Rank() < Warning.Rank() {
		return d.close(ctx, agg, raw, CaseInfo, "an info aggregation never becomes a broadcast")
	}
	// One question at a time: while the operator has an undecided approval
	// for the same nodes at this tier or above, a newer aggregation adds
	// nothing to decide. A higher tier is always asked at once.
	held, err := d.waiting(ctx, agg)
	if err != nil {
		return err
	}
	if held != "" {
		return d.close(ctx, agg, raw, CaseHeld, "approval "+held+" for the same nodes is still waiting")
	}
	if err := d.request(ctx, agg, raw); err != nil {
		return err
	}
	d.setStatus(agg.ApprovalRequestID, CasePending, "")
	return nil
}

// request files the approval request of an aggregation's broadcast.
func (d *Desk) request(ctx context.Context, agg Aggregation, raw []byte) error {
	draft := order{BroadcastText: agg.AggregationText, SeverityTier: agg.SeverityTier, TargetAudience: strings.Join(d.cfg.Audiences, ",")}
	args, err := marshal(draft)
	if err != nil {
		return err
	}
	_, err = d.cfg.Approvals.Request(ctx, approval.Request{
		ID: agg.ApprovalRequestID, Tool: broadcastTool, Args: args, Trace: trace(agg.ApprovalRequestID),
		Requester: "mesh-aggregator", Editable: orderEditable, Context: raw, TTL: d.cfg.TTL,
		Reason: fmt.Sprintf("Broadcast the %s aggregation of %d nodes to the field", agg.SeverityTier, len(agg.InputNodeIDs)),
	})
	return err
}

// close files the approval request of an aggregation the desk does not
// put to an operator and declines it at once as deskOperator, with the
// reason as its note.
func (d *Desk) close(ctx context.Context, agg Aggregation, raw []byte, status, reason string) error {
	if err := d.request(ctx, agg, raw); err != nil {
		return err
	}
	if _, err := d.cfg.Approvals.Decide(ctx, agg.ApprovalRequestID, approval.Decision{
		Decision: approval.Decline, Operator: deskOperator, Note: reason,
	}); err != nil {
		return err
	}
	d.setStatus(agg.ApprovalRequestID, status, reason)
	return nil
}

// waiting returns the id of an undecided, unexpired approval of an
// earlier aggregation of the same nodes at agg's tier or above, or "".
func (d *Desk) waiting(ctx context.Context, agg Aggregation) (string, error) {
	for _, c := range d.Cases() {
		prev := c.Aggregation
		if c.Status != CasePending || prev.ApprovalRequestID == agg.ApprovalRequestID ||
			prev.SeverityTier.Rank() < agg.SeverityTier.Rank() || !slices.Equal(sortedIDs(prev.InputNodeIDs), sortedIDs(agg.InputNodeIDs)) {
			continue
		}
		a, err := d.cfg.Approvals.Get(ctx, prev.ApprovalRequestID)
		if err != nil {
			return "", err
		}
		if a.Status == custody.ApprovalPending && d.cfg.Now().Before(a.ExpiresAt) {
			return a.ID, nil
		}
	}
	return "", nil
}

func sortedIDs(ids []string) []string {
	return slices.Sorted(slices.Values(ids))
}

func (d *Desk) keep(c *Case) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := c.Aggregation.ApprovalRequestID
	d.cases[id] = c
	d.order = append(d.order, id)
	if len(d.order) > d.cfg.Keep {
		delete(d.cases, d.order[0])
		d.order = d.order[1:]
	}
}

func (d *Desk) setStatus(id, status, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cases[id]; c != nil {
		c.Status, c.Reason = status, reason
	}
}

// Cases returns the cases, newest first.
func (d *Desk) Cases() []Case {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Case, 0, len(d.order))
	for i := len(d.order) - 1; i >= 0; i-- {
		out = append(out, *d.cases[d.order[i]])
	}
	return out
}

// Case returns one case; ENOTFOUND when the desk does not hold it.
func (d *Desk) Case(id string) (Case, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cases[id]
	if !ok {
		return Case{}, custody.Errorf(custody.ENOTFOUND, "no aggregation %s on the desk", id)
	}
	return *c, nil
}

// CheckApproval checks a broadcast order an operator is about to approve,
// on any decision path, against the aggregation it answers, as Publish
// will: an approval validator (approval.Config.Validate). An approval of
// another tool is an error wrapping approval.ErrNoContract.
func (d *Desk) CheckApproval(_ context.Context, a custody.Approval) error {
	if a.Tool != broadcastTool {
		return fmt.Errorf("mesh: tool %q: %w", a.Tool, approval.ErrNoContract)
	}
	c, err := d.Case(a.ID)
	if err != nil {
		return err
	}
	var o order
	if err := json.Unmarshal(a.Arguments, &o); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "the broadcast order does not decode", Err: err}
	}
	return checkOrder(c.Aggregation, o)
}

// orderDigest returns the approval digest of an order.
func orderDigest(raw []byte) (string, error) {
	return ledger.ActionDigest(broadcastTool, raw)
}

// checkOrder refuses an order that would raise the tier above the
// aggregation's, broadcast at info, name an unknown audience, or say what
// the aggregation did not.
func checkOrder(agg Aggregation, o order) error {
	if agg.SeverityTier.Rank() < Warning.Rank() {
		return custody.Errorf(custody.EDENIED, "aggregation %s is info: an info aggregation never becomes a broadcast", agg.ApprovalRequestID)
	}
	if !o.SeverityTier.Valid() || o.SeverityTier == Info {
		return custody.Errorf(custody.EDENIED, "broadcast tier %q: a broadcast is warning, critical or emergency", o.SeverityTier)
	}
	if o.SeverityTier.Rank() > agg.SeverityTier.Rank() {
		return custody.Errorf(custody.EDENIED, "broadcast tier %s would raise the aggregation's %s", o.SeverityTier, agg.SeverityTier)
	}
	auds := o.Audiences()
	if len(auds) == 0 {
		return custody.Errorf(custody.EINVALID, "a broadcast needs at least one target audience")
	}
	for _, a := range auds {
		if !validAudience(a) {
			return custody.Errorf(custody.EINVALID, "unknown audience %q: want one of %s", a, strings.Join(Audiences(), ", "))
		}
	}
	if err := fitText(o.BroadcastText, 20, 1200, maxMessageBytes); err != nil {
		return custody.Errorf(custody.EINVALID, "broadcast text: %v", err)
	}
	return checkOrderText(agg, o)
}

// checkOrderText checks an order's text against the aggregation's and
// the operator's own words, which its recorded edit must tell truly: the
// edit from the aggregation text to the order's, or none.
func checkOrderText(agg Aggregation, o order) error {
	edit := diffText(agg.AggregationText, o.BroadcastText)
	if o.OperatorEdit != "" && o.OperatorEdit != edit.String() {
		return custody.Errorf(custody.EINVALID, "the order's operator_edit is not the edit from the proposed text to its broadcast_text, which is %q", edit)
	}
	tier := string(o.SeverityTier)
	if o.OperatorEdit != "" {
		return broadcastGuard(agg.AggregationText, edit.inserted(), tier)(o.BroadcastText)
	}
	err := broadcastGuard(agg.AggregationText, "", tier)(o.BroadcastText)
	if err == nil || broadcastGuard(agg.AggregationText, edit.inserted(), tier)(o.BroadcastText) != nil {
		return err
	}
	// Only the claims the edit would record as the operator's are amiss
	// (an order edited outside the desk's form): say how to record them.
	e := *custody.AsError(err)
	e.Message += fmt.Sprintf("; to broadcast a claim of the operator's own, approve the order with operator_edit set to %q", edit)
	return &e
}
