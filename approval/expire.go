package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/custody-dev/custody"
)

// sweepActor is the ledger actor of entries the expiry sweep writes.
const sweepActor = "custody"

// notifyFailure is the notify.failed ledger body.
type notifyFailure struct {
	ID      string `json:"approval_request_id"`
	Channel string `json:"channel"`
	Error   string `json:"error"`
}

// escalation is the approval.escalated ledger body.
type escalation struct {
	ID          string `json:"approval_request_id"`
	From        string `json:"from_channel"`
	To          string `json:"to_channel"`
	Escalations int    `json:"escalations"`
	ExpiresAt   string `json:"expires_at"`
}

// nsEscalations counts the escalations of each request in the state
// store, so that sweeps sharing a store make each escalation once.
const nsEscalations = "approval.escalations"

// expiry is the approval.expired ledger body.
type expiry struct {
	ID        string `json:"approval_request_id"`
	Tool      string `json:"tool"`
	Digest    string `json:"action_digest"`
	ExpiresAt string `json:"expires_at"`
}

// ExpireDue sweeps the pending requests. A request that has waited its
// escalation share of its lifetime is escalated while an operator can
// still act on it: the next channel in the escalation order is notified
// (approval.escalated entry). The k-th escalation is due once the request
// has waited 1-(1-f)^k of its lifetime, f the service's EscalateAt: with
// the default one half, at one half, three quarters, seven eighths. A
// request past its expiry is marked expired (approval.expired entry) and
// nobody is paged about it: nobody could act on it. It returns how many
// requests expired. A request that an operator decided in the meantime is
// left alone.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	pending, err := s.List(ctx, custody.ApprovalPending)
	if err != nil {
		return 0, err
	}
	now := s.now()
	n := 0
	for _, p := range pending {
		if now.Before(p.ExpiresAt) {
			if err := s.escalateDue(ctx, p, now); err != nil {
				return n, err
			}
			continue
		}
		ok, err := s.expire(ctx, p.ID, now)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// escalationDue returns when the escalation after k earlier ones of a
// request is due: once it has waited 1-(1-f)^(k+1) of its lifetime.
func (s *Service) escalationDue(a custody.Approval, k int) time.Time {
	life := a.ExpiresAt.Sub(a.CreatedAt)
	share := 1 - math.Pow(1-s.escalateAt, float64(k+1))
	return a.CreatedAt.Add(time.Duration(float64(life) * share))
}

// expire expires one request if it is still pending and due, and records
// it. It reports whether it expired the request.
func (s *Service) expire(ctx context.Context, id string, now time.Time) (bool, error) {
	cur, err := s.store.Approval(ctx, id)
	if err != nil {
		return false, storeError("expire approval", err)
	}
	if cur.Status != custody.ApprovalPending || now.Before(cur.ExpiresAt) {
		return false, nil
	}
	a := cur
	a.Status = custody.ApprovalExpired
	body, err := json.Marshal(expiry{ID: a.ID, Tool: a.Tool, Digest: a.Digest, ExpiresAt: custody.FormatTime(a.ExpiresAt)})
	if err != nil {
		return false, fmt.Errorf("encode expiry: %w", err)
	}
	_, err = s.record(ctx, custody.KindApprovalExpired, sweepActor, a, body, custody.UpdateApproval(a, custody.ApprovalPending))
	if custody.ErrorKind(err) == custody.ECONFLICT {
		return false, nil // an operator decided it in the meantime
	}
	return err == nil, err
}

// escalateDue re-notifies a pending request through the channel after
// its own, if there is one and the next escalation is due at now, and
// records approval.escalated with the change of channel. The change holds
// only while the request is pending and no other sweep (of this instance
// or another sharing the store) made this escalation first: the
// escalation counter of the request may not pass the escalation's number.
func (s *Service) escalateDue(ctx context.Context, a custody.Approval, now time.Time) error {
	next := s.nextChannel(a.Channel)
	if next == "" || now.Before(s.escalationDue(a, a.Escalations)) {
		return nil
	}
	from := a.Channel
	a.Channel = next
	a.Escalations++
	body, err := json.Marshal(escalation{ID: a.ID, From: from, To: next, Escalations: a.Escalations,
		ExpiresAt: custody.FormatTime(a.ExpiresAt)})
	if err != nil {
		return fmt.Errorf("encode escalation: %w", err)
	}
	_, err = s.record(ctx, custody.KindApprovalEscalate, sweepActor, a, body,
		custody.IncrState(nsEscalations, a.ID, 1, int64(a.Escalations)),
		custody.UpdateApproval(a, custody.ApprovalPending))
	if Refused(err) {
		return nil // decided, or escalated by another sweep, in the meantime
	}
	if err != nil {
		return err
	}
	s.notify(ctx, a, next)
	return nil
}

// nextChannel returns the channel after ch in the escalation order (the
// console inbox, then the notifiers in order), or "" at the end.
func (s *Service) nextChannel(ch string) string {
	if ch == ConsoleChannel || ch == "" {
		if len(s.notifiers) == 0 {
			return ""
		}
		return s.notifiers[0].Name()
	}
	for i, n := range s.notifiers {
		if n.Name() == ch && i+1 < len(s.notifiers) {
			return s.notifiers[i+1].Name()
		}
	}
	return ""
}

// notifier returns the notifier serving channel, or nil.
func (s *Service) notifier(channel string) Notifier {
	for _, n := range s.notifiers {
		if n.Name() == channel {
			return n
		}
	}
	return nil
}

// notify tells channel about a. The console inbox needs no message. A
// failure is recorded as notify.failed; it never changes the request.
func (s *Service) notify(ctx context.Context, a custody.Approval, channel string) {
	n := s.notifier(channel)
	if n == nil {
		return
	}
	err := n.Notify(ctx, a)
	if err == nil {
		return
	}
	body, merr := json.Marshal(notifyFailure{ID: a.ID, Channel: channel, Error: err.Error()})
	if merr != nil {
		return
	}
	// A failed record of a failed notification leaves the request pending
	// and visible in the console inbox, which is the safe side.
	_, _ = s.record(ctx, custody.KindNotifyFailed, sweepActor, a, body)
}

// Run calls ExpireDue every interval until ctx is done. Sweep errors are
// retried on the next tick.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.ExpireDue(ctx)
		}
	}
}
