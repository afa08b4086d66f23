package approval

import (
	"context"
	"encoding/json"
	"fmt"
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
}

// expiry is the approval.expired ledger body.
type expiry struct {
	ID        string `json:"approval_request_id"`
	Tool      string `json:"tool"`
	Digest    string `json:"action_digest"`
	ExpiresAt string `json:"expires_at"`
}

// ExpireDue marks every pending request past its expiry as expired
// (approval.expired entry) and escalates it: the next channel in the
// escalation order is told that the action went undecided
// (approval.escalated entry). It returns how many requests expired. A
// request that an operator decided in the meantime is left alone.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	pending, err := s.List(ctx, custody.ApprovalPending)
	if err != nil {
		return 0, err
	}
	now := s.now()
	n := 0
	for _, p := range pending {
		if now.Before(p.ExpiresAt) {
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

// expire expires one request if it is still pending and due, records it and
// escalates it. It reports whether it expired the request.
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
	if err != nil {
		return false, err
	}
	return true, s.escalate(ctx, a)
}

// escalate re-notifies an expired request through the channel after its
// own, if there is one, and records approval.escalated with the change of
// channel.
func (s *Service) escalate(ctx context.Context, a custody.Approval) error {
	next := s.nextChannel(a.Channel)
	if next == "" {
		return nil
	}
	from := a.Channel
	a.Channel = next
	a.Escalations++
	body, err := json.Marshal(escalation{ID: a.ID, From: from, To: next, Escalations: a.Escalations})
	if err != nil {
		return fmt.Errorf("encode escalation: %w", err)
	}
	if _, err := s.record(ctx, custody.KindApprovalEscalate, sweepActor, a, body, custody.UpdateApproval(a, custody.ApprovalExpired)); err != nil {
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
