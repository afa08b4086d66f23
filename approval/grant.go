package approval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
)

// A grant is an operator's approval of a bounded class of calls, made
// while deciding a held call: the calls of the agent that asked, to the
// tool it asked for, whose arguments match a JSON Schema, for at most a
// number of calls or until a time. It is kept in the state store (a grant
// document by id, and an index by agent and tool) with its grant.created
// entry, in one commit; a revocation likewise with grant.revoked.
//
// Its uses are a counter in the state store, committed by the gateway
// with the call.started entry of each call the grant authorises under the
// grant's limit (UseChange), so that concurrent calls, at one instance or
// at many sharing a store, never take more uses than there are. A
// revocation adds revokedMark to the counter, past every limit, in the
// same commit as its entry: no use commits after a revocation.

// State namespaces of grants.
const (
	nsGrant = "grant"
	// nsGrantUses counts the uses of each grant.
	nsGrantUses = "grant.uses"
	// nsGrantForPrefix, followed by the JSON array [agent, tool], holds
	// the ids of the grants of that agent and tool.
	nsGrantForPrefix = "grant.for:"
)

// Bounds of the use counter. A grant's limit is at most maxGrantUses, and
// unboundedUses stands for a grant bounded by time alone; revokedMark,
// added by a revocation, passes both.
const (
	maxGrantUses  = 1 << 30
	unboundedUses = 1 << 39
	revokedMark   = 1 << 40
)

// GrantTerms are what an operator grants when approving a held call:
// further calls of the same agent and tool whose arguments match
// Arguments, at most MaxUses of them (0: no count) and before Expires
// (zero: no deadline). At least one bound is needed.
type GrantTerms struct {
	// Arguments is a JSON Schema (an object) the arguments must match.
	Arguments json.RawMessage
	MaxUses   int64
	Expires   time.Time
}

// grantRevocation is the grant.revoked ledger body.
type grantRevocation struct {
	ID       string `json:"grant_id"`
	Operator string `json:"operator_id"`
	Reason   string `json:"reason"`
	Agent    string `json:"agent"`
	Tool     string `json:"tool"`
	Uses     int64  `json:"uses"`
}

// newGrant checks terms and builds the grant they make for the approval
// a, decided by operator at now. Errors are EINVALID, naming the term.
func (s *Service) newGrant(a custody.Approval, t GrantTerms, operator, note string, now time.Time) (custody.Grant, error) {
	g := custody.Grant{
		ID: uuid.NewString(), Operator: operator, Agent: a.Requester, Tool: a.Tool, Arguments: t.Arguments,
		MaxUses: t.MaxUses, Definition: a.Definition, Approval: a.ID, Trace: a.Trace, Note: note,
		CreatedAt: now, Status: custody.GrantActive,
	}
	switch {
	case s.state == nil || s.checkGrant == nil:
		return g, custody.Errorf(custody.EINVALID, "grants are not available here: approve this call once")
	case a.Requester == "":
		return g, custody.Errorf(custody.EINVALID, "approval %s names no agent: a grant needs the agent it is for", a.ID)
	case t.MaxUses < 0 || t.MaxUses > maxGrantUses:
		return g, custody.Errorf(custody.EINVALID, "grant max_uses %d: want 1 to %d, or 0 for a grant bounded by its expiry alone", t.MaxUses, maxGrantUses)
	case t.MaxUses == 0 && t.Expires.IsZero():
		return g, custody.Errorf(custody.EINVALID, "a grant needs max_uses or expires: it must end")
	case !t.Expires.IsZero() && !now.Before(t.Expires):
		return g, custody.Errorf(custody.EINVALID, "grant expires %s is not in the future", custody.FormatTime(t.Expires))
	}
	if !t.Expires.IsZero() {
		exp := t.Expires.UTC().Truncate(time.Microsecond)
		g.ExpiresAt = &exp
	}
	if _, err := CompileGrant(g); err != nil {
		return g, err
	}
	return g, nil
}

// CompileGrant compiles the schema of g's arguments; EINVALID when it is
// not a JSON Schema object that compiles.
func CompileGrant(g custody.Grant) (*contract.Schema, error) {
	if len(g.Arguments) == 0 {
		return nil, custody.Errorf(custody.EINVALID, "a grant needs the JSON Schema of the arguments it allows")
	}
	sch, err := contract.Compile("urn:custody:grant:"+g.ID, g.Arguments)
	if err != nil {
		return nil, &custody.Error{Kind: custody.EINVALID, Err: err,
			Message: "grant arguments: " + custody.ErrorMessage(err)}
	}
	return sch, nil
}

// checkNewGrant runs the service's grant check (Config.CheckGrant): the
// tool must take grants, and the agent may call it.
func (s *Service) checkNewGrant(ctx context.Context, g custody.Grant) error {
	err := s.checkGrant(ctx, g)
	if err == nil {
		return nil
	}
	ce := custody.AsError(err)
	if ce.Kind == custody.EUNAVAILABLE || ce.Kind == custody.EINTERNAL || ce.Kind == custody.EDENIED {
		return ce
	}
	return &custody.Error{Kind: custody.EINVALID, Violations: ce.Violations, Err: err, Message: ce.Message}
}

// createGrant commits g with its grant.created entry.
func (s *Service) createGrant(ctx context.Context, g custody.Grant) error {
	body, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("encode grant: %w", err)
	}
	doc := body
	changes := []custody.Change{
		custody.PutState(nsGrant, g.ID, doc),
		custody.PutState(grantIndex(g.Agent, g.Tool), g.ID, json.RawMessage(`true`)),
	}
	_, err = s.recordGrant(ctx, custody.KindGrantCreated, g.Operator, g, body, changes...)
	return err
}

// recordGrant commits one grant entry with the refs grant,
// approval_request_id and tool_definition_sha256, and its changes.
func (s *Service) recordGrant(ctx context.Context, kind, actor string, g custody.Grant, body []byte, changes ...custody.Change) (custody.Entry, error) {
	refs := map[string]string{custody.RefGrant: g.ID}
	if g.Approval != "" {
		refs[RefApproval] = g.Approval
	}
	if g.Definition != "" {
		refs[custody.RefToolDefinition] = g.Definition
	}
	e, err := s.ledger.Commit(ctx, custody.Entry{
		At: custody.FormatTime(s.now()), Kind: kind, Trace: g.Trace, Actor: actor, Refs: refs, Body: body,
	}, changes...)
	if err != nil && Refused(err) {
		return custody.Entry{}, err
	}
	if err != nil {
		return custody.Entry{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "evidence ledger unavailable",
			Err: fmt.Errorf("append %s: %w", kind, err)}
	}
	return e, nil
}

// grantIndex is the namespace of the grants of agent and tool.
func grantIndex(agent, tool string) string {
	b, _ := json.Marshal([2]string{agent, tool})
	return nsGrantForPrefix + string(b)
}

// Grant returns one grant with its uses and status; ENOTFOUND if absent.
func (s *Service) Grant(ctx context.Context, id string) (custody.Grant, error) {
	if s.state == nil {
		return custody.Grant{}, custody.Errorf(custody.ENOTFOUND, "grant %s not found", id)
	}
	raw, err := s.state.State(ctx, nsGrant, id)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return custody.Grant{}, custody.Errorf(custody.ENOTFOUND, "grant %s not found", id)
	}
	if err != nil {
		return custody.Grant{}, storeError("read grant", err)
	}
	return s.readGrant(ctx, raw)
}

// readGrant decodes a stored grant and reads its uses.
func (s *Service) readGrant(ctx context.Context, raw json.RawMessage) (custody.Grant, error) {
	var g custody.Grant
	if err := json.Unmarshal(raw, &g); err != nil {
		return custody.Grant{}, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("stored grant: %w", err)}
	}
	n, err := s.uses(ctx, g.ID)
	if err != nil {
		return custody.Grant{}, err
	}
	g.Uses = n % revokedMark
	g.Status = GrantState(g, s.now())
	return g, nil
}

// uses reads the use counter of grant id.
func (s *Service) uses(ctx context.Context, id string) (int64, error) {
	raw, err := s.state.State(ctx, nsGrantUses, id)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return 0, nil
	}
	if err != nil {
		return 0, storeError("read grant uses", err)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("grant %s uses: %w", id, err)}
	}
	return n, nil
}

// GrantState returns where g stands at now by its own fields: revoked,
// used up, expired or active. Whether a re-pin voided it is for who knows
// the tool's current definition to say (see Void).
func GrantState(g custody.Grant, now time.Time) custody.GrantStatus {
	switch {
	case g.RevokedAt != nil:
		return custody.GrantRevoked
	case g.MaxUses > 0 && g.Uses >= g.MaxUses:
		return custody.GrantUsedUp
	case g.ExpiresAt != nil && !now.Before(*g.ExpiresAt):
		return custody.GrantExpired
	}
	return custody.GrantActive
}

// Void marks g void when it is active and was made under another
// definition of its tool than current, the one pinned now.
func Void(g *custody.Grant, current string) {
	if g.Status == custody.GrantActive && g.Definition != current {
		g.Status = custody.GrantVoid
	}
}

// Grants lists every grant, newest first, with its uses and status.
// current, when not nil, gives the definition of a tool as now pinned
// (ok false for a tool it does not know): an active grant made under
// another is listed void.
func (s *Service) Grants(ctx context.Context, current func(tool string) (string, bool)) ([]custody.Grant, error) {
	if s.state == nil {
		return nil, nil
	}
	docs, err := s.state.States(ctx, nsGrant)
	if err != nil {
		return nil, storeError("list grants", err)
	}
	out := make([]custody.Grant, 0, len(docs))
	for _, raw := range docs {
		g, err := s.readGrant(ctx, raw)
		if err != nil {
			return nil, err
		}
		if current != nil {
			if def, ok := current(g.Tool); ok {
				Void(&g, def)
			}
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b custody.Grant) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// GrantsFor lists the grants of agent for tool, newest first: a keyed
// lookup whose cost grows with that agent's grants for that tool only.
func (s *Service) GrantsFor(ctx context.Context, agent, tool string) ([]custody.Grant, error) {
	if s.state == nil {
		return nil, nil
	}
	ids, err := s.state.States(ctx, grantIndex(agent, tool))
	if err != nil {
		return nil, storeError("find grants", err)
	}
	out := make([]custody.Grant, 0, len(ids))
	for id := range ids {
		g, err := s.Grant(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b custody.Grant) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Revoke ends the grant id for good, in operator's name, with reason:
// the grant.revoked entry and the revocation commit together, and no call
// commits a use of the grant after them. Errors: EINVALID without an
// operator or a reason, ENOTFOUND, ECONFLICT when already revoked,
// EUNAVAILABLE when the store fails.
func (s *Service) Revoke(ctx context.Context, id, operator, reason string) (custody.Grant, error) {
	switch {
	case operator == "":
		return custody.Grant{}, custody.Errorf(custody.EINVALID, "a revocation needs the operator's id")
	case reason == "":
		return custody.Grant{}, custody.Errorf(custody.EINVALID, "a revocation needs a reason")
	}
	g, err := s.Grant(ctx, id)
	if err != nil {
		return custody.Grant{}, err
	}
	if g.RevokedAt != nil {
		return custody.Grant{}, alreadyRevoked(g)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	uses := g.Uses
	g.RevokedAt, g.RevokedBy, g.RevokeReason = &now, operator, reason
	stored := g
	stored.Uses, stored.Status = 0, custody.GrantRevoked
	doc, err := json.Marshal(stored)
	if err != nil {
		return custody.Grant{}, fmt.Errorf("encode grant: %w", err)
	}
	body, err := json.Marshal(grantRevocation{ID: g.ID, Operator: operator, Reason: reason, Agent: g.Agent, Tool: g.Tool, Uses: uses})
	if err != nil {
		return custody.Grant{}, fmt.Errorf("encode revocation: %w", err)
	}
	// The mark takes the counter past every use limit; its own limit
	// refuses a second revocation.
	mark := custody.IncrState(nsGrantUses, g.ID, revokedMark, 2*revokedMark-1).Else(alreadyRevoked(g))
	if _, err := s.recordGrant(ctx, custody.KindGrantRevoked, operator, g, body, mark, custody.PutState(nsGrant, g.ID, doc)); err != nil {
		return custody.Grant{}, err
	}
	g.Status = custody.GrantRevoked
	return g, nil
}

// alreadyRevoked is the refusal of a second revocation of g.
func alreadyRevoked(g custody.Grant) *custody.Error {
	return custody.Errorf(custody.ECONFLICT, "grant %s is already revoked", g.ID)
}

// UseChange returns the change that uses g once, committed with the
// call.started entry of the call g authorises: it holds only while g has
// uses left and is not revoked, and otherwise refuses the commit with
// ECONFLICT, since the grant was used up or revoked since it was checked.
func UseChange(g custody.Grant) custody.Change {
	limit := int64(unboundedUses)
	if g.MaxUses > 0 {
		limit = g.MaxUses
	}
	return custody.IncrState(nsGrantUses, g.ID, 1, limit).Else(custody.Errorf(custody.ECONFLICT,
		"grant %s was used up or revoked while this call was checked; call again to ask an operator", g.ID))
}

// SuggestGrant returns the schema a grant for calls like the one with
// arguments args is prefilled with, for an operator to read and edit: of
// an object, every member it has is required and no other is allowed; a
// path ("notes/today.md") allows the same directory and below it, but no
// segment that starts with a dot ("..", hidden files); a number allows up
// to the same value (an amount ceiling); any other value (a recipient, a
// flag) must be the same. Arguments that are not an object must be the
// same value.
func SuggestGrant(args json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return json.Marshal(map[string]json.RawMessage{"const": args})
	}
	props := make(map[string]any, len(obj))
	required := make([]string, 0, len(obj))
	for k, v := range obj {
		props[k] = suggestValue(v)
		required = append(required, k)
	}
	slices.Sort(required)
	return json.Marshal(map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
}

// suggestValue is the prefilled schema of one argument value.
func suggestValue(v json.RawMessage) any {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&x) != nil {
		return map[string]any{"const": v}
	}
	switch x := x.(type) {
	case string:
		if prefix, ok := pathPrefix(x); ok {
			return map[string]any{"type": "string", "pattern": "^" + regexp.QuoteMeta(prefix) + pathRest}
		}
	case json.Number:
		typ := "number"
		if _, err := x.Int64(); err == nil {
			typ = "integer"
		}
		return map[string]any{"type": typ, "maximum": x}
	}
	return map[string]any{"const": v}
}

// pathRest matches what may follow a granted path prefix: segments that
// do not start with a dot, so that ".." never climbs out of it.
const pathRest = `(?:[^/.][^/]*/)*[^/.][^/]*$`

// pathPrefix returns the directory of a path-like string, up to and with
// its last slash: "notes/" of "notes/today.md". A URL, a string with
// spaces or one without a directory is no path.
func pathPrefix(s string) (string, bool) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 || strings.Contains(s, "://") || strings.ContainsAny(s, " \t\n") || strings.Contains(s, "..") {
		return "", false
	}
	return s[:i+1], true
}
