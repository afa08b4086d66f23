// Package replay answers what a new policy would have decided of the
// calls a ledger recorded, without running anything: each recorded call
// (its tool, agent, exact arguments, trace and time) is decided again, in
// ledger order, by gate.Gateway.Decide under the new configuration, with
// the trace counts and rate windows the new decisions leave kept in
// memory, and compared with what happened. The tools of MCP servers are
// those the ledger's pins define, as they were pinned when each call was
// made; no server is started. The chain is verified as it is read, with
// the Verifier `custody ledger verify` uses; a ledger that does not
// verify is refused.
//
// What a replay cannot know it reports, call by call and counted in
// Report.NotReplayed, rather than guess: calls custody itself failed,
// calls that ran under a grant or a human's approval that the new policy
// would still hold, calls of tools with custody links, of tools no pin
// defines, and calls refused while their tool was in quarantine.
package replay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/ledger"
)

// pageSize is how many entries a replay reads and verifies at once.
const pageSize = 1000

// maxExamples bounds the example seqs of one change.
const maxExamples = 5

// Options tune a replay.
type Options struct {
	// Since reports only the calls recorded at or after it; every call
	// when zero. Earlier calls are still decided, so that the counts they
	// leave are those of a live run.
	Since time.Time
	// Keys are the keys the checkpoints must be signed with; none checks
	// the checkpoints against the entries only.
	Keys []ed25519.PublicKey
}

// Call is one recorded call and what the new policy decides of it.
type Call struct {
	// Seq is the seq of the call's first entry.
	Seq      int64        `json:"seq"`
	At       string       `json:"at"`
	Tool     string       `json:"tool"`
	Agent    string       `json:"agent"`
	Trace    string       `json:"trace"`
	Recorded gate.Verdict `json:"recorded"`
	Replayed gate.Verdict `json:"replayed"`
	// NotReplayed is why the replay does not know what the new policy
	// makes of the call (NotGrant, NotLink, ...); "" when it does.
	NotReplayed string `json:"not_replayed,omitempty"`
	// Rule, Where and Message say why the new policy denies or holds it.
	Rule    string `json:"rule,omitempty"`
	Where   string `json:"where,omitempty"`
	Message string `json:"message,omitempty"`
}

// Changed reports whether the new policy decides the call otherwise.
func (c Call) Changed() bool { return c.NotReplayed == "" && c.Recorded != c.Replayed }

// Change is the calls of one tool and agent that go from one verdict to
// another.
type Change struct {
	Tool  string       `json:"tool"`
	Agent string       `json:"agent"`
	From  gate.Verdict `json:"from"`
	To    gate.Verdict `json:"to"`
	Count int          `json:"count"`
	// Rules are the rules that decide the new verdict, sorted.
	Rules []string `json:"rules"`
	// Seqs are the first entries of up to five of the calls.
	Seqs []int64 `json:"example_seqs"`
}

// Report is the outcome of a replay.
type Report struct {
	// Entries is how many entries were verified; Head is the last one's
	// hash.
	Entries int64  `json:"entries"`
	Head    string `json:"head"`
	// Calls counts the calls replayed since Options.Since; Changed those
	// the new policy decides otherwise.
	Calls   int      `json:"calls"`
	Changed int      `json:"changed"`
	Changes []Change `json:"changes"`
	// NotReplayed counts, by reason, the recorded calls since
	// Options.Since whose new decision the replay does not know: they
	// count in neither Calls nor Changed.
	NotReplayed []Unreplayed `json:"not_replayed"`
	// Notes say what a replay does not decide.
	Notes []string `json:"notes"`
	// Decisions are every call since Options.Since, replayed or not, in
	// ledger order.
	Decisions []Call `json:"-"`
}

// Notes a report carries: what a replay cannot know.
var notes = []string{
	"a call that needs an approval is held: no approval is asked or given, and none of the recorded approvals or grants is used",
	"agents' groups from an identity provider are not known to a replay",
}

// Run replays the calls l recorded under the offer o.
func Run(ctx context.Context, l custody.Ledger, o Offer, opts Options) (*Report, error) {
	r, err := newReplayer(o)
	if err != nil {
		return nil, err
	}
	v := ledger.NewKeysVerifier(opts.Keys...)
	rep := &Report{Notes: notes, NotReplayed: []Unreplayed{}}
	for after := int64(0); ; {
		es, err := l.Entries(ctx, custody.Query{After: after, Limit: pageSize})
		if err != nil {
			return nil, fmt.Errorf("read ledger: %w", err)
		}
		if len(es) == 0 {
			break
		}
		if err := v.Entries(es); err != nil {
			return nil, fmt.Errorf("verify ledger: %w", err)
		}
		for i := range es {
			if err := r.entry(ctx, &es[i], opts.Since, rep); err != nil {
				return nil, err
			}
		}
		after = es[len(es)-1].Seq
	}
	if err := checkpoints(ctx, l, v, rep); err != nil {
		return nil, err
	}
	rep.Changes = group(rep.Decisions)
	return rep, nil
}

// checkpoints gives the verifier the ledger's checkpoints and finishes.
func checkpoints(ctx context.Context, l custody.Ledger, v *ledger.Verifier, rep *Report) error {
	cps, err := l.Checkpoints(ctx)
	if err != nil {
		return fmt.Errorf("read checkpoints: %w", err)
	}
	for _, cp := range cps {
		if err := v.Checkpoint(cp); err != nil {
			return fmt.Errorf("verify ledger: %w", err)
		}
	}
	vr, err := v.Finish()
	if err != nil {
		return fmt.Errorf("verify ledger: %w", err)
	}
	rep.Entries, rep.Head = vr.Entries, vr.Head
	return nil
}

// replayer decides recorded calls one after the other.
type replayer struct {
	offer Offer
	gw    *gate.Gateway
	svc   *approval.Service
	mem   *memory
	pins  *pins
	now   time.Time
	// open are the calls whose call.started has no outcome yet, by
	// what identifies a call, oldest first.
	open map[string][]int64
	// waiting holds when each action held for an agent was asked.
	waiting map[[2]string]time.Time
}

// newReplayer builds the gateway of o on memory.
func newReplayer(o Offer) (*replayer, error) {
	r := &replayer{mem: newMemory(), pins: newPins(), open: map[string][]int64{}, waiting: map[[2]string]time.Time{}}
	var err error
	r.svc, err = approval.New(approval.Config{Store: r.mem, Ledger: r.mem, State: r.mem, Now: r.clock})
	if err != nil {
		return nil, err
	}
	if err := r.build(o); err != nil {
		return nil, err
	}
	return r, nil
}

// clock is the replayer's time: the recorded time of the call it decides.
func (r *replayer) clock() time.Time { return r.now }

// build makes the gateway of o, on the replayer's memory, the one that
// decides the next calls.
func (r *replayer) build(o Offer) error {
	gw, err := gate.New(gate.Config{Registry: o.Registry, Ledger: r.mem, Approvals: r.svc, State: r.mem, Now: r.clock,
		Allowed: o.Allowed, Logger: slog.New(slog.DiscardHandler)}, o.Envelope, o.Tools)
	if err != nil {
		return custody.Errorf(custody.EINVALID, "%v", err)
	}
	r.offer, r.gw = o, gw
	return nil
}

// body is what a replay reads of a call entry's body.
type body struct {
	Tool           string          `json:"tool"`
	RequestedTrace string          `json:"requested_trace"`
	Arguments      json.RawMessage `json:"arguments"`
	ArgumentsB64   []byte          `json:"arguments_base64"`
	Error          *struct {
		Kind string `json:"kind"`
	} `json:"error"`
}

// entry takes the next entry: a call's first entry is decided, the
// outcome of a call that started closes it.
func (r *replayer) entry(ctx context.Context, e *custody.Entry, since time.Time, rep *Report) error {
	if isPin(e.Kind) {
		return r.pins.entry(e)
	}
	if !isCall(e.Kind) {
		return nil
	}
	var b body
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return fmt.Errorf("seq %d: %s body: %w", e.Seq, e.Kind, err)
	}
	args := []byte(b.Arguments)
	if string(b.Arguments) == "null" || len(b.Arguments) == 0 {
		args = b.ArgumentsB64
	}
	trace := e.Trace
	if b.RequestedTrace != "" {
		trace = b.RequestedTrace
	}
	key := string(must(json.Marshal([4]string{e.Trace, e.Actor, b.Tool, string(args)})))
	if e.Kind != custody.KindCallStarted && len(r.open[key]) > 0 {
		r.open[key] = r.open[key][1:]
		return nil
	}
	at, err := time.Parse(custody.TimeFormat, e.At)
	if err != nil {
		return fmt.Errorf("seq %d: time %q: %w", e.Seq, e.At, err)
	}
	reported := since.IsZero() || !at.Before(since)
	recorded, ok := recordedVerdict(e, b)
	if !ok {
		if reported {
			c := Call{Seq: e.Seq, At: e.At, Tool: b.Tool, Agent: e.Actor, Trace: trace, NotReplayed: NotFailed}
			r.report(rep, c)
		}
		return nil
	}
	if e.Kind == custody.KindCallStarted {
		r.open[key] = append(r.open[key], e.Seq)
	}
	if err := r.rebuild(ctx); err != nil {
		return err
	}
	quarantined := r.pins.quarantined[b.Tool]
	c, d, err := r.decide(ctx, custody.Call{Tool: b.Tool, Trace: trace, Actor: e.Actor, Args: args}, at)
	if err != nil {
		return fmt.Errorf("seq %d: %w", e.Seq, err)
	}
	c.Seq, c.At, c.Recorded = e.Seq, e.At, recorded
	ran := e.Kind != custody.KindCallRefused
	c.NotReplayed = notReplayed(c, ran && e.Refs[approval.RefApproval] != "", ran && e.Refs[custody.RefGrant] != "", quarantined, d)
	if d.Rule == gate.RuleEnvelope && r.offer.unpinned(c.Agent, c.Tool) {
		c.NotReplayed = NotUnpinned
	}
	if reported {
		r.report(rep, c)
	}
	return nil
}

// report adds a call since Options.Since to the report.
func (r *replayer) report(rep *Report, c Call) {
	rep.Decisions = append(rep.Decisions, c)
	if c.NotReplayed != "" {
		countUnreplayed(rep, c.NotReplayed, c.Seq)
		return
	}
	rep.Calls++
	if c.Changed() {
		rep.Changed++
	}
}

// decide decides one call at its time and keeps the state it leaves.
func (r *replayer) decide(ctx context.Context, c custody.Call, at time.Time) (Call, gate.Decision, error) {
	r.now = at
	d, err := r.gw.Decide(ctx, c, r.isWaiting)
	if err != nil {
		return Call{}, d, err
	}
	r.mem.apply(d.Changes)
	if d.Verdict == gate.Held && !r.isWaiting(c.Actor, d.Digest) {
		r.waiting[[2]string{c.Actor, d.Digest}] = at
	}
	return Call{Tool: c.Tool, Agent: c.Actor, Trace: c.Trace, Replayed: d.Verdict, Rule: d.Rule, Where: d.Where, Message: d.Message}, d, nil
}

// isWaiting reports whether an approval the replay asked for the agent's
// action is still waiting: asked less than approval.DefaultTTL ago.
func (r *replayer) isWaiting(actor, digest string) bool {
	asked, ok := r.waiting[[2]string{actor, digest}]
	return ok && r.now.Before(asked.Add(approval.DefaultTTL))
}

// isCall reports whether an entry of kind may be a call's first entry or
// its outcome. call.interrupted only closes, at a restart, a call whose
// call.started was decided already.
func isCall(kind string) bool {
	switch kind {
	case custody.KindCallStarted, custody.KindCallSucceeded, custody.KindCallRefused, custody.KindCallFailed,
		custody.KindCallCancelled, custody.KindCallOutcomeUnknown, custody.KindContractBreach:
		return true
	}
	return false
}

// recordedVerdict is what the recorded policy decided of the call whose
// first entry is e: it ran (allowed, or held when an approval or a grant
// let it run), was refused (denied), or waits for an approval (held). ok
// is false for a refusal that was custody's own failure.
func recordedVerdict(e *custody.Entry, b body) (v gate.Verdict, ok bool) {
	if e.Kind != custody.KindCallRefused {
		if e.Refs[approval.RefApproval] != "" || e.Refs[custody.RefGrant] != "" {
			return gate.Held, true
		}
		return gate.Allowed, true
	}
	kind := ""
	if b.Error != nil {
		kind = b.Error.Kind
	}
	switch kind {
	case custody.EPENDING, custody.EEXPIRED:
		return gate.Held, true
	case custody.EUNAVAILABLE, custody.EINTERNAL:
		return "", false
	}
	return gate.Denied, true
}

// group gathers the changed calls by tool, agent and verdicts, in the
// order of their first call.
func group(calls []Call) []Change {
	out := []Change{}
	at := map[[4]string]int{}
	for _, c := range calls {
		if !c.Changed() {
			continue
		}
		k := [4]string{c.Tool, c.Agent, string(c.Recorded), string(c.Replayed)}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Change{Tool: c.Tool, Agent: c.Agent, From: c.Recorded, To: c.Replayed, Rules: []string{}})
		}
		ch := &out[i]
		ch.Count++
		if len(ch.Seqs) < maxExamples {
			ch.Seqs = append(ch.Seqs, c.Seq)
		}
		rule := ruleName(c)
		if rule != "" && !slices.Contains(ch.Rules, rule) {
			ch.Rules = append(ch.Rules, rule)
			slices.Sort(ch.Rules)
		}
	}
	return out
}

// ruleName names the rule of a call's new verdict, with the condition
// that decided it.
func ruleName(c Call) string {
	if c.Where != "" && c.Where != c.Rule {
		return c.Rule + " " + c.Where
	}
	return c.Rule
}

// must returns v; its error cannot happen.
func must[T any](v T, _ error) T { return v }
