// Package approval holds consequential actions for a human: a request is
// bound to the digest of one exact action (tool and canonical arguments),
// decided by an operator, used at most once and only before it expires.
// An undecided request escalates to the next channel while it can still
// be decided (at a share of its lifetime, Config.EscalateAt), and expires
// on a sweep once its time is up.
//
// Every state transition is committed together with its entry on the
// evidence ledger, in one transaction (custody.Ledger.Commit): a request
// as approval.requested, a decision as approval.decided, an expiry as
// approval.expired, an escalation as approval.escalated, and a use
// with the entry of the action that used it. A transition holds only if
// the request still has the status it was decided from, so a crash or a
// race never leaves a decision without its entry. Entries carry the refs
// approval_request_id and action_digest; the approvals of one action in
// one trace are found by a keyed lookup in the store (For).
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// DefaultTTL is how long a request waits for a decision unless told.
const DefaultTTL = 5 * time.Minute

// DefaultEscalateAt is the share of its lifetime a pending request waits
// before it escalates to the next channel.
const DefaultEscalateAt = 0.5

// ConsoleChannel is the channel of the operator console inbox. It needs no
// notifier: the approval store is the inbox.
const ConsoleChannel = "pwa"

// Decisions an operator may take.
const (
	Approve = "approved"
	Decline = "declined"
)

// Refs written on approval ledger entries.
const (
	RefApproval = "approval_request_id"
	RefDigest   = "action_digest"
)

// Notifier tells a human that an approval waits for them.
type Notifier interface {
	// Name is the channel the notifier serves ("sms", "pager").
	Name() string
	// Notify delivers a. An error means the human may not know; the
	// request stays pending either way.
	Notify(ctx context.Context, a custody.Approval) error
}

// Config configures a Service.
type Config struct {
	Store  custody.ApprovalStore
	Ledger custody.Ledger
	// Notifiers are the channels in escalation order. The console inbox
	// (ConsoleChannel) is implicit and comes first.
	Notifiers []Notifier
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// TTL is the default time a request waits; DefaultTTL when zero.
	TTL time.Duration
	// EscalateAt is the share of a pending request's lifetime after which
	// it escalates to the next channel, before it expires (see
	// ExpireDue); DefaultEscalateAt when zero. It must be below 1.
	EscalateAt float64
	// Changes, when set, sends the id of every approval that changes, on
	// this instance or any other sharing the store, until ctx ends (the
	// store's ApprovalChanges): Await and Watch wake on it. Without it,
	// or for a change it misses, they re-read every Poll.
	Changes func(ctx context.Context) (<-chan string, error)
	// Poll is how often Await and Watch re-read the store besides Changes
	// (a decision taken by another process on a SQLite store, say);
	// DefaultPoll when zero.
	Poll time.Duration
	// Validate, when set, checks an action an operator is about to
	// approve, with the arguments as approved (edited or not): the tool's
	// input contract and the policy that narrows it. An error refuses the
	// decision and nothing is recorded; its violations point into the
	// arguments. A validator that has no contract for the tool returns an
	// error wrapping ErrNoContract: an edit of such an action is refused,
	// since it cannot be checked, and an unedited one is approved as asked.
	Validate func(ctx context.Context, a custody.Approval) error
	// State keeps the grants and counts their uses; it must be kept in
	// the same store as Ledger. Without it a grant is refused.
	State custody.StateStore
	// CheckGrant checks a grant about to be made against the tool it is
	// for: that the tool takes grants (its policy may forbid them), that
	// the agent may call it. An error refuses the decision and nothing is
	// recorded. Without it a grant is refused: no grant is made that
	// nothing checked.
	CheckGrant func(ctx context.Context, g custody.Grant) error
}

// ErrNoContract is wrapped by a Config.Validate error for an action whose
// tool the validator does not know.
var ErrNoContract = errors.New("no contract for the tool")

// Service requests, decides, consumes and expires approvals.
type Service struct {
	store     custody.ApprovalStore
	ledger    custody.Ledger
	notifiers []Notifier
	now       func() time.Time
	ttl       time.Duration
	// escalateAt is Config.EscalateAt.
	escalateAt float64
	validate   func(ctx context.Context, a custody.Approval) error
	state      custody.StateStore
	checkGrant func(ctx context.Context, g custody.Grant) error
	// watch wakes the waiters of Await and Watch.
	watch *watchers
}

// New returns a Service. It fails when the store or the ledger is missing:
// an approval that is not recorded is no approval.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("approval: no approval store")
	}
	if cfg.Ledger == nil {
		return nil, errors.New("approval: no ledger")
	}
	s := &Service{store: cfg.Store, ledger: cfg.Ledger, notifiers: cfg.Notifiers, now: cfg.Now, ttl: cfg.TTL, validate: cfg.Validate,
		state: cfg.State, checkGrant: cfg.CheckGrant, watch: newWatchers(cfg.Changes, cfg.Poll)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	switch s.escalateAt = cfg.EscalateAt; {
	case s.escalateAt == 0:
		s.escalateAt = DefaultEscalateAt
	case !(s.escalateAt > 0 && s.escalateAt < 1):
		return nil, fmt.Errorf("approval: escalate at %v of the lifetime: want a share above 0 and below 1", cfg.EscalateAt)
	}
	for i, n := range cfg.Notifiers {
		if n == nil || n.Name() == "" || n.Name() == ConsoleChannel {
			return nil, fmt.Errorf("approval: notifier %d needs a name other than %q", i, ConsoleChannel)
		}
	}
	return s, nil
}

// Request asks a human to authorise one exact action.
type Request struct {
	Tool      string
	Args      json.RawMessage
	Trace     string
	Requester string
	Reason    string
	// Channel names the notifier to use first; ConsoleChannel when empty.
	Channel string
	// TTL overrides the service's default wait.
	TTL time.Duration
	// Editable names top-level string arguments an operator may edit.
	Editable []string
	// Context is shown to the operator and never hashed.
	Context json.RawMessage
	// ID is a preassigned request id (a UUID); a new UUID v4 when empty.
	ID string
	// Definition is the SHA-256 of the tool definition the action is
	// asked under, when the tool has one (custody.Approval.Definition).
	Definition string
}

// Request stores a pending approval for r with its approval.requested
// entry, in one commit, and notifies through r's channel. A notifier failure is recorded as
// notify.failed and leaves the request pending: it is never approved by
// default. Errors are EINVALID for a malformed request and EUNAVAILABLE when
// the store or the ledger cannot be written.
func (s *Service) Request(ctx context.Context, r Request) (custody.Approval, error) {
	a, err := s.newApproval(r)
	if err != nil {
		return custody.Approval{}, err
	}
	body, err := json.Marshal(a)
	if err != nil {
		return custody.Approval{}, fmt.Errorf("encode approval request: %w", err)
	}
	// The request and its approval.requested entry are one commit: no
	// request exists that the ledger does not show, with its requester.
	if _, err := s.record(ctx, custody.KindApprovalRequest, a.Requester, a, body, custody.CreateApproval(a)); err != nil {
		return custody.Approval{}, err
	}
	s.notify(ctx, a, a.Channel)
	return a, nil
}

// newApproval checks r and builds the pending approval it asks for.
func (s *Service) newApproval(r Request) (custody.Approval, error) {
	if r.Tool == "" {
		return custody.Approval{}, custody.Errorf(custody.EINVALID, "approval request names no tool")
	}
	digest, err := ledger.ActionDigest(r.Tool, r.Args)
	if err != nil {
		return custody.Approval{}, &custody.Error{Kind: custody.EINVALID, Message: "approval arguments are not canonical JSON", Err: err}
	}
	id := r.ID
	if id == "" {
		id = uuid.NewString()
	} else if _, err := uuid.Parse(id); err != nil {
		return custody.Approval{}, custody.Errorf(custody.EINVALID, "approval request id %q is not a UUID", id)
	}
	ttl, channel := r.TTL, r.Channel
	if ttl <= 0 {
		ttl = s.ttl
	}
	if channel == "" {
		channel = ConsoleChannel
	}
	if channel != ConsoleChannel && s.notifier(channel) == nil {
		return custody.Approval{}, custody.Errorf(custody.EINVALID, "approval channel %q has no notifier", channel)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	return custody.Approval{
		ID: id, Status: custody.ApprovalPending, Tool: r.Tool, Arguments: r.Args, Digest: digest,
		Trace: r.Trace, Requester: r.Requester, Reason: r.Reason, Channel: channel,
		CreatedAt: now, ExpiresAt: now.Add(ttl), Editable: r.Editable, Context: r.Context, Definition: r.Definition,
	}, nil
}

// Get returns one approval; ENOTFOUND if there is none with that id.
func (s *Service) Get(ctx context.Context, id string) (custody.Approval, error) {
	a, err := s.store.Approval(ctx, id)
	if err != nil {
		return custody.Approval{}, storeError("read approval", err)
	}
	return a, nil
}

// List returns the approvals with the given status, newest first; status ""
// lists all.
func (s *Service) List(ctx context.Context, status custody.ApprovalStatus) ([]custody.Approval, error) {
	as, err := s.store.Approvals(ctx, status)
	if err != nil {
		return nil, storeError("list approvals", err)
	}
	return as, nil
}

// For returns the approvals of trace asked for the action with the given
// digest, or bound to it by an operator's edit, newest first.
func (s *Service) For(ctx context.Context, trace, digest string) ([]custody.Approval, error) {
	as, err := s.store.ApprovalsFor(ctx, trace, digest)
	if err != nil {
		return nil, storeError("find approvals", err)
	}
	return as, nil
}

// Of returns the approvals requester asked for the action with the given
// digest, or bound to it by an operator's edit, in any of its traces,
// newest first.
func (s *Service) Of(ctx context.Context, requester, digest string) ([]custody.Approval, error) {
	as, err := s.store.ApprovalsOf(ctx, requester, digest)
	if err != nil {
		return nil, storeError("find approvals", err)
	}
	return as, nil
}

// Consume uses the approval id for the action with the given digest: it
// commits e, the entry of the action that uses it, and the use in one
// commit, and returns the sealed entry. It succeeds only once, and only
// for an approved, unexpired request bound to digest. Otherwise nothing is
// written and the error is EDENIED (declined, or bound to another
// action), EPENDING (not decided yet), EEXPIRED, ECONFLICT (already used)
// or ENOTFOUND; EUNAVAILABLE when the ledger fails.
func (s *Service) Consume(ctx context.Context, id, digest string, e custody.Entry) (custody.Entry, error) {
	a, err := s.store.Approval(ctx, id)
	if err != nil {
		return custody.Entry{}, storeError("consume approval", err)
	}
	if err := Usable(a, digest, s.now()); err != nil {
		return custody.Entry{}, err
	}
	// Approved, unused and bound to digest now: only a use can change
	// that, and the change's condition refuses a second one.
	out, err := s.ledger.Commit(ctx, e, ConsumeChange(id))
	if err != nil && !Refused(err) {
		return custody.Entry{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "evidence ledger unavailable",
			ApprovalRequestID: id, Err: fmt.Errorf("append %s: %w", e.Kind, err)}
	}
	return out, err
}

// ConsumeChange returns the change that uses the approval id for the entry
// it is committed with: it holds only while the approval is approved and
// unused, and otherwise refuses the commit with ECONFLICT, since an
// approved approval can only have been used since.
func ConsumeChange(id string) custody.Change {
	return custody.ConsumeApproval(id).Else(&custody.Error{Kind: custody.ECONFLICT, ApprovalRequestID: id,
		Message: fmt.Sprintf("approval %s was already used; an approval authorises one call", id)})
}

// Usable returns nil when a may authorise the action with the given digest
// at time now, or the *custody.Error saying why not.
func Usable(a custody.Approval, digest string, now time.Time) error {
	switch {
	case a.Status == custody.ApprovalConsumed || a.ConsumedSeq != 0:
		return &custody.Error{Kind: custody.ECONFLICT, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s was already used (ledger seq %d); an approval authorises one call", a.ID, a.ConsumedSeq)}
	case a.Status == custody.ApprovalDeclined:
		return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s was declined by an operator", a.ID)}
	case a.Status == custody.ApprovalVoided:
		return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s was voided: tool %q was re-pinned to another definition since it was asked", a.ID, a.Tool)}
	case a.Status == custody.ApprovalExpired || !now.Before(a.ExpiresAt):
		return &custody.Error{Kind: custody.EEXPIRED, ApprovalRequestID: a.ID, ExpiresAt: a.ExpiresAt,
			Message: fmt.Sprintf("approval %s expired at %s", a.ID, custody.FormatTime(a.ExpiresAt))}
	case a.Status == custody.ApprovalPending:
		return &custody.Error{Kind: custody.EPENDING, ApprovalRequestID: a.ID, ExpiresAt: a.ExpiresAt,
			Message: fmt.Sprintf("approval %s is waiting for an operator", a.ID)}
	case a.Status != custody.ApprovalApproved:
		return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s has status %q", a.ID, a.Status)}
	case a.Digest != digest:
		return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s authorises a different action: the tool or arguments differ from what was approved", a.ID)}
	}
	return nil
}

// record commits one approval entry, with the refs approval_request_id
// and action_digest, and the changes it is the evidence of. A change whose
// condition fails is returned as the store said; any other failure is the
// ledger's.
func (s *Service) record(ctx context.Context, kind, actor string, a custody.Approval, body []byte, changes ...custody.Change) (custody.Entry, error) {
	e, err := s.ledger.Commit(ctx, custody.Entry{
		At:    custody.FormatTime(s.now()),
		Kind:  kind,
		Trace: a.Trace,
		Actor: actor,
		Refs:  map[string]string{RefApproval: a.ID, RefDigest: a.Digest},
		Body:  body,
	}, changes...)
	if err != nil && len(changes) > 0 && Refused(err) {
		return custody.Entry{}, err
	}
	if err != nil {
		return custody.Entry{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "evidence ledger unavailable",
			ApprovalRequestID: a.ID, Err: fmt.Errorf("append %s: %w", kind, err)}
	}
	return e, nil
}

// Refused reports whether err is a commit refused because a change's
// condition did not hold (ECONFLICT, EDENIED, ENOTFOUND, EEXPIRED,
// EPENDING), as opposed to a failure of the store.
func Refused(err error) bool {
	switch custody.ErrorKind(err) {
	case custody.ECONFLICT, custody.EDENIED, custody.ENOTFOUND, custody.EEXPIRED, custody.EPENDING:
		return true
	}
	return false
}

// storeError keeps a *custody.Error from the store as it is and makes any
// other failure EUNAVAILABLE: fail closed when approvals cannot be read.
func storeError(op string, err error) error {
	var ce *custody.Error
	if errors.As(err, &ce) {
		return err
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "approval store unavailable", Err: fmt.Errorf("%s: %w", op, err)}
}
