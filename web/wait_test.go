package web_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/web"
)

// waited is the answer of a call that asked to wait.
type waited struct {
	status  int
	body    string
	applied string
	err     error
}

// callWaiting posts a call of post_announcement with Prefer: wait=20 and
// returns its answer on the channel, and the function that cancels it.
func (e *env) callWaiting(trace, args string) (<-chan waited, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	out := make(chan waited, 1)
	body := `{"trace_id":"` + trace + `","tool":"post_announcement","arguments":` + args + `}`
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "respond-async, wait=20")
	go func() {
		res, err := e.srv.Client().Do(req)
		if err != nil {
			out <- waited{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		out <- waited{status: res.StatusCode, body: string(b), applied: res.Header.Get("Preference-Applied"), err: err}
	}()
	return out, cancel
}

// requested returns the next approval the store creates or changes.
func requested(t *testing.T, ids <-chan string) string {
	t.Helper()
	select {
	case id := <-ids:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no approval was requested")
		return ""
	}
}

// TestCallPreferWait: POST /v1/calls with Prefer: wait=N holds a call
// waiting for approval open until an operator decides through the
// approval API, and answers as decided.
func TestCallPreferWait(t *testing.T) {
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	setup := func(t *testing.T, configure func(*web.Config)) (*env, <-chan string) {
		e := newEnvWith(t, configure)
		ids, err := e.db.ApprovalChanges(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return e, ids
	}
	t.Run("Approved", func(t *testing.T) {
		e, ids := setup(t, nil)
		ans, _ := e.callWaiting("t-wait", args)
		id := requested(t, ids)
		if res := e.decide(id, `{"decision":"approved"}`); res.Status != 200 {
			t.Fatalf("decide: %d %s", res.Status, res.Body)
		}
		a := <-ans
		if a.err != nil || a.status != 200 || !strings.Contains(a.body, "LUNCH AT NOON") || a.applied != "wait=20" {
			t.Fatalf("the approved call: %d %q %s %v; want 200 with the post and Preference-Applied: wait=20", a.status, a.applied, a.body, a.err)
		}
		if n := len(e.entries("t-wait", custody.KindCallSucceeded)); n != 1 {
			t.Fatalf("%d call.succeeded in the trace, want 1", n)
		}
	})
	t.Run("Declined", func(t *testing.T) {
		e, ids := setup(t, nil)
		ans, _ := e.callWaiting("t-wait", args)
		id := requested(t, ids)
		e.decide(id, `{"decision":"declined"}`)
		if a := <-ans; a.status != 403 || !strings.Contains(a.body, `"kind":"denied"`) || !strings.Contains(a.body, "declined") {
			t.Fatalf("the declined call: %d %s; want 403 denied", a.status, a.body)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		e, ids := setup(t, nil)
		ans, _ := e.callWaiting("t-wait", args)
		id := requested(t, ids)
		e.clock.Add(approval.DefaultTTL + time.Second)
		if n, err := e.approvals.ExpireDue(context.Background()); err != nil || n != 1 {
			t.Fatalf("expiry sweep: %d, %v", n, err)
		}
		if a := <-ans; a.status != 409 || !strings.Contains(a.body, `"kind":"expired"`) || !strings.Contains(a.body, id) {
			t.Fatalf("the expired call: %d %s; want 409 expired naming %s", a.status, a.body, id)
		}
	})
	t.Run("ClientCancels", func(t *testing.T) {
		e, ids := setup(t, nil)
		ans, cancel := e.callWaiting("t-wait", args)
		id := requested(t, ids)
		cancel()
		if a := <-ans; a.err == nil {
			t.Fatalf("a cancelled call answered %d %s", a.status, a.body)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			es := e.entries("t-wait", custody.KindCallCancelled)
			if len(es) == 1 && es[0].Refs[approval.RefApproval] == id {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("call.cancelled entries %+v, want one naming %s", es, id)
			}
		}
	})
	t.Run("CappedBelowTheWriteTimeout", func(t *testing.T) {
		e, _ := setup(t, func(c *web.Config) { c.MaxWait = time.Second })
		a := <-func() <-chan waited { ans, _ := e.callWaiting("t-wait", args); return ans }()
		if a.status != 202 || a.applied != "wait=1" {
			t.Fatalf("an undecided call past the cap: %d %q %s; want 202 with Preference-Applied: wait=1", a.status, a.applied, a.body)
		}
	})
	t.Run("WithoutPrefer", func(t *testing.T) {
		e, _ := setup(t, nil)
		res := e.send(mustRequest(t, e, args, ""))
		if res.Status != 202 || res.Header.Get("Preference-Applied") != "" {
			t.Fatalf("a call without Prefer: %d %v; want 202 at once, no Preference-Applied", res.Status, res.Header)
		}
	})
}

func mustRequest(t *testing.T, e *env, args, prefer string) *http.Request {
	t.Helper()
	body := `{"trace_id":"t-now","tool":"post_announcement","arguments":` + args + `}`
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/calls", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	return req
}
