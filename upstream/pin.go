package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
)

// Ledger entry kinds of tool pinning.
const (
	KindToolPinned      = "tool.pinned"
	KindToolQuarantined = "tool.quarantined"
	KindToolRepinned    = "tool.repinned"
)

// Ledger entry kinds of prompt pinning: a prompt is text that enters the
// model's context, pinned and quarantined exactly as a tool is.
const (
	KindPromptPinned      = "prompt.pinned"
	KindPromptQuarantined = "prompt.quarantined"
	KindPromptRepinned    = "prompt.repinned"
)

// Refs on the entries of upstream calls and pins.
const (
	RefUpstream   = "upstream"
	RefDefinition = custody.RefToolDefinition
)

// RepinTool is the action name of an approval that re-pins a changed tool
// definition: it never names a tool an agent can call.
const RepinTool = "custody.repin"

// repinTTL is how long a re-pin request waits for an operator.
const repinTTL = 7 * 24 * time.Hour

// nsPin and nsPromptPin are the state namespaces of the pins of tools
// and of prompts, each keyed by exposed name.
const (
	nsPin       = "upstream.pin"
	nsPromptPin = "upstream.prompt_pin"
)

// pinKind is what a Pins pins: tools or prompts, each in a namespace and
// under entry kinds of its own, so that a prompt and a tool exposed under
// one name never share a pin.
type pinKind struct {
	ns, noun                      string
	pinned, quarantined, repinned string
}

var (
	toolPins   = pinKind{ns: nsPin, noun: "tool", pinned: KindToolPinned, quarantined: KindToolQuarantined, repinned: KindToolRepinned}
	promptPins = pinKind{ns: nsPromptPin, noun: "prompt", pinned: KindPromptPinned, quarantined: KindPromptQuarantined, repinned: KindPromptRepinned}
)

// Definition is what pinning covers of a tool or a prompt: everything a
// server tells an agent about it (a prompt has Arguments where a tool has
// schemas).
type Definition struct {
	Name         string               `json:"name"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  json.RawMessage      `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage      `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// Arguments are a prompt's arguments.
	Arguments []*mcp.PromptArgument `json:"arguments,omitempty"`
}

// PromptDefinitionOf returns the definition of an MCP prompt.
func PromptDefinitionOf(p *mcp.Prompt) Definition {
	return Definition{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments}
}

// DefinitionOf returns the definition of an MCP tool.
func DefinitionOf(t *mcp.Tool) (Definition, error) {
	d := Definition{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations}
	var err error
	if d.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
		return d, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	if t.OutputSchema != nil {
		if d.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return d, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
		}
	}
	return d, nil
}

// Hash is the hex SHA-256 of the definition's canonical JSON (RFC 8785).
func (d Definition) Hash() (string, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	canon, err := ledger.Canonicalize(raw)
	if err != nil {
		return "", fmt.Errorf("tool %s: definition is not canonical JSON: %w", d.Name, err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// pin is what the state keeps of a pinned definition.
type pin struct {
	SHA256     string     `json:"sha256"`
	Upstream   string     `json:"upstream"`
	Definition Definition `json:"definition"`
}

// quarantine is a tool whose offered definition differs from its pin.
type quarantine struct {
	upstream string
	old, new pin
	// recorded says the tool.quarantined entry is on the ledger.
	recorded bool
	// approval is the re-pin request, "" until one was made.
	approval string
}

// Pins keeps each exposed tool's definition pinned on the ledger and
// quarantines a tool whose server offers a different one until an
// operator approves the change. It is safe for concurrent use.
type Pins struct {
	kind      pinKind
	ledger    custody.Ledger
	state     custody.StateStore
	approvals *approval.Service
	now       func() time.Time

	mu     sync.Mutex
	hashes map[string]string     // exposed name -> pinned hash
	defs   map[string]Definition // exposed name -> pinned definition
	quar   map[string]*quarantine
	// prompts are the pins of prompts, made on first use.
	prompts *Pins
}

// NewPins returns pins recorded on l and kept in st; approvals carries the
// re-pin requests.
func NewPins(l custody.Ledger, st custody.StateStore, approvals *approval.Service) *Pins {
	return newPins(toolPins, l, st, approvals, time.Now)
}

func newPins(k pinKind, l custody.Ledger, st custody.StateStore, approvals *approval.Service, now func() time.Time) *Pins {
	return &Pins{kind: k, ledger: l, state: st, approvals: approvals, now: now,
		hashes: map[string]string{}, defs: map[string]Definition{}, quar: map[string]*quarantine{}}
}

// Prompts returns the pins of prompts kept beside these pins of tools: the
// same ledger, state and approvals, a namespace and entry kinds of their
// own (prompt.pinned, prompt.quarantined, prompt.repinned).
func (p *Pins) Prompts() *Pins {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prompts == nil {
		p.prompts = newPins(promptPins, p.ledger, p.state, p.approvals, p.now)
	}
	return p.prompts
}

// Check compares the definition a server offers for the tool exposed as
// name with its pin. A tool seen for the first time is pinned (a
// tool.pinned entry); the same definition passes; a different one puts
// the tool in quarantine (a tool.quarantined entry with the change and a
// re-pin approval request for the operators).
func (p *Pins) Check(ctx context.Context, name, upstream string, d Definition) error {
	h, err := d.Hash()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old, found, err := p.load(ctx, name)
	if err != nil {
		return err
	}
	offered := pin{SHA256: h, Upstream: upstream, Definition: d}
	switch {
	case !found:
		return p.pin(ctx, name, offered, p.kind.pinned, "custody", nil)
	case old.SHA256 == h:
		p.hashes[name], p.defs[name] = h, old.Definition
		if q := p.quar[name]; q != nil {
			// The server went back to the pinned definition.
			delete(p.quar, name)
		}
		return nil
	}
	if q := p.quar[name]; q != nil && q.new.SHA256 == h {
		return nil
	}
	p.hashes[name], p.defs[name] = old.SHA256, old.Definition
	return p.quarantine(ctx, name, upstream, old, offered)
}

// load reads the pin of name.
func (p *Pins) load(ctx context.Context, name string) (pin, bool, error) {
	raw, err := p.state.State(ctx, p.kind.ns, name)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return pin{}, false, nil
	}
	if err != nil {
		return pin{}, false, fmt.Errorf("read the pin of %s: %w", name, err)
	}
	var pn pin
	if err := json.Unmarshal(raw, &pn); err != nil {
		return pin{}, false, fmt.Errorf("the pin of %s is corrupt: %w", name, err)
	}
	return pn, true, nil
}

// pin records pn on the ledger and keeps it in state, in one commit with
// changes (the use of a re-pin approval), so that no pin holds without
// its entry.
func (p *Pins) pin(ctx context.Context, name string, pn pin, kind, actor string, extra map[string]any, changes ...custody.Change) error {
	body := map[string]any{p.kind.noun: name, "upstream": pn.Upstream, "sha256": pn.SHA256, "definition": pn.Definition}
	for k, v := range extra {
		body[k] = v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(pn)
	if err != nil {
		return err
	}
	refs := map[string]string{RefUpstream: pn.Upstream, RefDefinition: pn.SHA256, p.kind.noun: name}
	e := custody.Entry{Kind: kind, Trace: p.trace(name), Actor: actor, Refs: refs, Body: raw}
	changes = append([]custody.Change{custody.PutState(p.kind.ns, name, doc)}, changes...)
	if _, err := p.ledger.Commit(ctx, e, changes...); err != nil {
		return fmt.Errorf("record %s of %s: %w", kind, name, err)
	}
	p.hashes[name], p.defs[name] = pn.SHA256, pn.Definition
	return nil
}

// pinTrace is the trace of a tool's pin entries and re-pin approvals.
func pinTrace(name string) string { return "custody.pin/" + name }

// trace is the trace of the pin entries and re-pin approvals of name: a
// prompt's apart from a tool's of the same name.
func (p *Pins) trace(name string) string {
	if p.kind.noun == "tool" {
		return pinTrace(name)
	}
	return "custody.pin/" + p.kind.noun + "/" + name
}

// quarantine puts the tool in quarantine, records the change and asks an
// operator to approve it. The tool is quarantined before anything is
// recorded: a change the ledger cannot take now is refused all the same,
// and recorded by the next Admit.
func (p *Pins) quarantine(ctx context.Context, name, upstream string, old, offered pin) error {
	q := &quarantine{upstream: upstream, old: old, new: offered}
	p.quar[name] = q
	return p.record(ctx, name, q)
}

// record writes what of a quarantine is not on the ledger yet: its
// tool.quarantined entry, then its re-pin request.
func (p *Pins) record(ctx context.Context, name string, q *quarantine) error {
	change := Diff(q.old.Definition, q.new.Definition)
	if !q.recorded {
		body, _ := json.Marshal(map[string]any{p.kind.noun: name, "upstream": q.upstream,
			"pinned_sha256": q.old.SHA256, "offered_sha256": q.new.SHA256,
			"offered": q.new.Definition, "change": change})
		refs := map[string]string{RefUpstream: q.upstream, RefDefinition: q.new.SHA256, p.kind.noun: name}
		if _, err := p.ledger.Append(ctx, custody.Entry{Kind: p.kind.quarantined, Trace: p.trace(name), Actor: "custody", Refs: refs, Body: body}); err != nil {
			return fmt.Errorf("record the quarantine of %s: %w", name, err)
		}
		q.recorded = true
	}
	return p.request(ctx, name, q, change)
}

// request asks the operators to approve the offered definition, unless
// a request for exactly that re-pin already waits or was approved and
// not used (decided while custody was stopped, say): that one stands, so
// that a restart neither opens another nor loses the operator's decision.
func (p *Pins) request(ctx context.Context, name string, q *quarantine, change string) error {
	args, _ := json.Marshal(map[string]string{p.kind.noun: name, "upstream": q.upstream, "sha256": q.new.SHA256})
	if id, err := p.standing(ctx, name, args); err != nil || id != "" {
		q.approval = id
		return err
	}
	detail, _ := json.Marshal(map[string]any{"change": change, "pinned_sha256": q.old.SHA256, "offered_sha256": q.new.SHA256})
	a, err := p.approvals.Request(ctx, approval.Request{
		Tool: RepinTool, Args: args, Trace: p.trace(name), Requester: "custody", TTL: repinTTL,
		Reason:  fmt.Sprintf("upstream %s changed the definition of %s %s: approve to re-pin it, decline to keep it quarantined", q.upstream, p.kind.noun, name),
		Context: detail,
	})
	if err != nil {
		return fmt.Errorf("request the re-pin of %s: %w", name, err)
	}
	q.approval = a.ID
	return nil
}

// standing returns the id of a re-pin request for args that still
// stands: pending or approved, unused and unexpired; "" when none does.
func (p *Pins) standing(ctx context.Context, name string, args []byte) (string, error) {
	digest, err := ledger.ActionDigest(RepinTool, args)
	if err != nil {
		return "", err
	}
	as, err := p.approvals.For(ctx, p.trace(name), digest)
	if err != nil {
		return "", fmt.Errorf("find the re-pin requests of %s: %w", name, err)
	}
	for _, a := range as {
		live := p.now().Before(a.ExpiresAt) && a.ConsumedSeq == 0
		if a.Tool == RepinTool && a.Digest == digest && live &&
			(a.Status == custody.ApprovalPending || a.Status == custody.ApprovalApproved) {
			return a.ID, nil
		}
	}
	return "", nil
}

// Admit returns the check the gateway runs before each call of the tool
// exposed as name: a quarantined tool is denied until its re-pin request
// is approved, and re-pinned on the first call after.
func (p *Pins) Admit(name string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		q := p.quar[name]
		if q == nil {
			return nil
		}
		return p.settle(ctx, name, q)
	}
}

// settle looks at the re-pin request of a quarantined tool, first
// recording the quarantine if that failed when the change was seen.
func (p *Pins) settle(ctx context.Context, name string, q *quarantine) error {
	if q.approval == "" {
		if err := p.record(ctx, name, q); err != nil {
			return &custody.Error{Kind: custody.EUNAVAILABLE, Err: err, Message: fmt.Sprintf(
				"%s %q is quarantined: upstream %s changed its definition, and the change cannot be recorded now", p.kind.noun, name, q.upstream)}
		}
	}
	denied := &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: q.approval, Message: fmt.Sprintf(
		"%s %q is quarantined: upstream %s changed its definition (pinned sha256 %.12s…, offered %.12s…); an operator must approve the change (approval %s)",
		p.kind.noun, name, q.upstream, q.old.SHA256, q.new.SHA256, q.approval)}
	a, err := p.approvals.Get(ctx, q.approval)
	if err != nil {
		return err
	}
	if adopted, err := p.adopt(ctx, name, q, a); adopted || err != nil {
		return err
	}
	// An approval not used before the request's expiry can no longer
	// re-pin (approval.Usable): like a request nobody decided in time,
	// it is asked again.
	lapsed := !p.now().Before(a.ExpiresAt) && (a.Status == custody.ApprovalPending || a.Status == custody.ApprovalApproved)
	switch {
	case a.Status == custody.ApprovalApproved && !lapsed:
		return p.repin(ctx, name, q, a)
	case a.Status == custody.ApprovalExpired || lapsed:
		if err := p.request(ctx, name, q, Diff(q.old.Definition, q.new.Definition)); err != nil {
			return err
		}
		denied.ApprovalRequestID = q.approval
		denied.Message = fmt.Sprintf("%s %q is quarantined: its re-pin request expired; approval %s now waits for an operator", p.kind.noun, name, q.approval)
	case a.Status == custody.ApprovalDeclined:
		denied.Message = fmt.Sprintf("%s %q is quarantined: an operator declined the changed definition offered by upstream %s", p.kind.noun, name, q.upstream)
	}
	return denied
}

// repin pins the approved definition, naming the operator, and uses the
// approval in the same commit; then it voids the approvals asked under
// the definition it replaced (voidOld).
func (p *Pins) repin(ctx context.Context, name string, q *quarantine, a custody.Approval) error {
	if err := approval.Usable(a, a.Digest, p.now()); err != nil {
		return err
	}
	extra := map[string]any{"previous_sha256": q.old.SHA256, "approval_request_id": a.ID, "operator_id": a.Operator}
	if err := p.pin(ctx, name, q.new, p.kind.repinned, a.Operator, extra, approval.ConsumeChange(a.ID)); err != nil {
		return err
	}
	delete(p.quar, name)
	return p.voidOld(ctx, name, q, a)
}

// voidOld voids every approval of name asked under the definition the
// re-pin approved by a replaced, pending or approved and unused, each
// with an approval.voided entry naming the re-pin: an approval of one
// definition never runs another, and the ledger says why it will not.
// The gateway refuses such an approval anyway (its definition differs);
// a failure here leaves the re-pin standing and is returned.
func (p *Pins) voidOld(ctx context.Context, name string, q *quarantine, a custody.Approval) error {
	_, err := p.approvals.VoidDefinition(ctx, name, q.old.SHA256, approval.Voiding{
		Actor:  a.Operator,
		Reason: fmt.Sprintf("%s %s was re-pinned from definition %.12s… to %.12s… (approval %s): an approval asked under the old definition never runs the new one", p.kind.noun, name, q.old.SHA256, q.new.SHA256, a.ID),
		Refs:   map[string]string{"repin_approval_request_id": a.ID, RefUpstream: q.upstream, p.kind.noun: name},
		Detail: map[string]any{"repin_approval_request_id": a.ID, "previous_sha256": q.old.SHA256, "sha256": q.new.SHA256, "operator_id": a.Operator},
	})
	if err != nil {
		return fmt.Errorf("void the approvals of %s under its old definition: %w", name, err)
	}
	return nil
}

// adopt ends the quarantine of name when its re-pin request was used by
// another instance or process on the same store, which re-pinned it: the
// pin in the store is then the offered definition. adopted says so.
func (p *Pins) adopt(ctx context.Context, name string, q *quarantine, a custody.Approval) (adopted bool, err error) {
	if a.Status != custody.ApprovalConsumed {
		return false, nil
	}
	pn, found, err := p.load(ctx, name)
	if err != nil || !found || pn.SHA256 != q.new.SHA256 {
		return false, err
	}
	p.hashes[name], p.defs[name] = pn.SHA256, pn.Definition
	delete(p.quar, name)
	return true, nil
}

// Settle re-pins every quarantined tool and prompt whose re-pin request
// an operator approved, however it was decided (the console, the API,
// the CLI; on this instance or another sharing the store), and returns
// how many it re-pinned. Serve runs it at start, for the decisions taken
// while it was stopped, and whenever an approval changes, so that a
// decision takes effect when it is taken, not at the tool's next call.
// The tools still in quarantine stay there; the error is the first
// failure to record a re-pin.
func (p *Pins) Settle(ctx context.Context) (int, error) {
	p.mu.Lock()
	names := slices.Sorted(maps.Keys(p.quar))
	n := 0
	var errs []error
	for _, name := range names {
		q := p.quar[name]
		if q == nil {
			continue
		}
		err := p.settle(ctx, name, q)
		switch {
		case err == nil:
			n++
		case custody.ErrorKind(err) != custody.EDENIED:
			errs = append(errs, err)
		}
	}
	prompts := p.prompts
	p.mu.Unlock()
	if prompts != nil {
		k, err := prompts.Settle(ctx)
		n += k
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// Pinned returns the pinned definition hash of the tool exposed as name,
// "" when none.
func (p *Pins) Pinned(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hashes[name]
}

// Definition returns the pinned definition of the tool exposed as name.
func (p *Pins) Definition(name string) (Definition, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.defs[name]
	return d, ok
}

// Quarantined reports whether the tool exposed as name is in quarantine.
func (p *Pins) Quarantined(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quar[name] != nil
}
