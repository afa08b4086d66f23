package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// postStatus posts body and returns the status and the answer, for use
// from several goroutines.
func postStatus(url, token, body string) (int, string, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// receipts collects the receipts the instances acknowledged.
type receipts struct {
	mu   sync.Mutex
	list []custody.Receipt
}

func (r *receipts) add(body string) error {
	var res custody.Result
	if err := json.Unmarshal([]byte(body), &res); err != nil || res.Receipt.Seq == 0 {
		return fmt.Errorf("a call answered 200 without a receipt: %s", body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, res.Receipt)
	return nil
}

// TestServeInstancesShareOneStore runs three serve instances on one
// database, driven together: calls on every instance while approvals are
// raced from all three, 100 times. Each approval is used exactly once,
// the chain verifies and a checkpoint covers its head, and every
// acknowledged receipt is on it.
func TestServeInstancesShareOneStore(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	var bases []string
	var stops []func() int
	for i := range 3 {
		base, _, stop := startServe(t, env, "--data", filepath.Join(dir, fmt.Sprint("data", i)))
		bases, stops = append(bases, base), append(stops, stop)
	}
	var acked receipts
	ctx, cancel := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for i := range 3 {
		load.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				call := fmt.Sprintf(`{"trace_id":"load-%d","tool":"get_time","arguments":{"zone":"UTC"}}`, i)
				code, body, err := postStatus(bases[(i+n)%3]+"/v1/calls", pgAgentToken, call)
				if err == nil && code != 200 {
					err = fmt.Errorf("load call: %d %s", code, body)
				}
				if err == nil {
					err = acked.add(body)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	const races, racers = 100, 4
	var raced sync.WaitGroup
	for r := range racers {
		raced.Go(func() {
			for i := r; i < races; i += racers {
				if err := raceApproval(bases, i, &acked); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	raced.Wait()
	cancel()
	load.Wait()
	for i, stop := range stops {
		if code := stop(); code != exitOK {
			t.Fatalf("instance %d exited %d", i, code)
		}
	}
	checkScaledLedger(t, url, races, acked.list)
}

// raceApproval asks for an announcement on one instance, approves it on
// another, and sends the approved call to all three at once: exactly one
// runs it, the others are refused with a conflict.
func raceApproval(bases []string, i int, acked *receipts) error {
	call := fmt.Sprintf(`{"trace_id":"race-%d","tool":"post_announcement","arguments":{"channel":"ops","message":"RACE %d"}}`, i, i)
	code, body, err := postStatus(bases[i%3]+"/v1/calls", pgAgentToken, call)
	if err != nil || code != 202 {
		return fmt.Errorf("race %d: ask: %d %s %v", i, code, body, err)
	}
	var pending struct {
		Error custody.ErrorDetail `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &pending); err != nil || pending.Error.ApprovalRequestID == "" {
		return fmt.Errorf("race %d: no approval id in %s", i, body)
	}
	decision := bases[(i+1)%3] + "/v1/approvals/" + pending.Error.ApprovalRequestID + "/decision"
	if code, body, err := postStatus(decision, pgOperatorToken, `{"decision":"approved"}`); err != nil || code != 200 {
		return fmt.Errorf("race %d: approve: %d %s %v", i, code, body, err)
	}
	codes, bodies, errs := make([]int, 3), make([]string, 3), make([]error, 3)
	var wg sync.WaitGroup
	for j := range 3 {
		wg.Go(func() { codes[j], bodies[j], errs[j] = postStatus(bases[j]+"/v1/calls", pgAgentToken, call) })
	}
	wg.Wait()
	won := 0
	for j, code := range codes {
		switch {
		case errs[j] != nil:
			return errs[j]
		case code == 200:
			won++
			if err := acked.add(bodies[j]); err != nil {
				return err
			}
		case code != 409:
			return fmt.Errorf("race %d: instance %d answered %d: %s", i, j, code, bodies[j])
		}
	}
	if won != 1 {
		return fmt.Errorf("race %d: %d instances ran the approved call (%v), want exactly 1", i, won, codes)
	}
	return nil
}

// checkScaledLedger opens the shared ledger and checks it.
func checkScaledLedger(t *testing.T, url string, races int, acked []custody.Receipt) {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := db.Verify(ctx)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	cp, err := db.LatestCheckpoint(ctx)
	if err != nil || cp.Size != rep.Entries {
		t.Fatalf("latest checkpoint %+v, %v; want one covering all %d entries", cp, err, rep.Entries)
	}
	entries, err := db.Entries(ctx, custody.Query{Limit: int(rep.Entries)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acked {
		if r.Seq > int64(len(entries)) || entries[r.Seq-1].Hash != r.Hash {
			t.Fatalf("acknowledged receipt %+v is not on the ledger", r)
		}
	}
	for i := range races {
		trace := fmt.Sprint("race-", i)
		es, err := db.Entries(ctx, custody.Query{Trace: trace, Kind: custody.KindCallSucceeded})
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: %d call.succeeded entries, %v; want 1", trace, len(es), err)
		}
	}
	t.Logf("%d entries, %d acknowledged calls, %d checkpoints", rep.Entries, len(acked), rep.Checkpoints)
}

// TestStacksShareBudget runs a per-trace budget on three gateways over
// one database: of calls raced from all three, exactly the budget runs.
func TestStacksShareBudget(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	tool := example.BenchTools("budgeted", "unused")[0]
	tool.Spec.MaxCallsPerTrace = 5
	var stacks []*stack
	for i := range 3 {
		st, err := m.openStack(context.Background(), filepath.Join(dir, fmt.Sprint("data", i)), "", tool)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stacks = append(stacks, st)
	}
	const calls = 30
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			_, errs[i] = stacks[i%3].gw.Call(context.Background(), custody.Call{
				Trace: "budget-1", Tool: "budgeted", Args: json.RawMessage(`{"zone":"UTC"}`), Actor: "bot", Via: "test"})
		})
	}
	wg.Wait()
	ran := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ran++
		case custody.ErrorKind(err) != custody.EDENIED:
			t.Fatalf("call: %v, want EDENIED past the budget", err)
		}
	}
	if ran != 5 {
		t.Fatalf("%d calls ran, want the budget of 5", ran)
	}
	if _, err := stacks[0].db.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStacksExpireOnce sweeps the same approvals from three instances at
// once, twice: each overdue approval expires once and pages nobody; each
// approval past half its lifetime escalates once, while still pending,
// and its next channel is notified once. The sweep's changes are
// conditional on the status and escalation count it read, so the
// instances need no lease: the one whose commit comes first wins and the
// others' are refused.
func TestStacksExpireOnce(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	var hits sync.Map // approval id -> *atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p approval.WebhookPayload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Error(err)
		}
		n, _ := hits.LoadOrStore(p.ID, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}))
	defer hook.Close()
	env := scaledEnv(url, dir)
	env["CUSTODY_NOTIFY"] = "sms=" + hook.URL
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	var stacks []*stack
	for i := range 3 {
		st, err := m.openStack(context.Background(), filepath.Join(dir, fmt.Sprint("data", i)), "")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stacks = append(stacks, st)
	}
	ctx := context.Background()
	const n = 20
	past, now := time.Now().Add(-time.Hour), time.Now()
	for i := range 2 * n {
		// ap-0 to ap-19 are overdue; ap-20 to ap-39 are past half their
		// lifetime.
		created, expires := past, past.Add(time.Minute)
		if i >= n {
			created, expires = now.Add(-time.Hour), now.Add(time.Hour)
		}
		a := custody.Approval{ID: fmt.Sprint("ap-", i), Status: custody.ApprovalPending, Tool: "post_announcement",
			Arguments: json.RawMessage(`{"channel":"ops","message":"X"}`), Digest: "d", Trace: "t1", Requester: "bot",
			Channel: approval.ConsoleChannel, CreatedAt: created, ExpiresAt: expires}
		e := custody.Entry{Kind: custody.KindApprovalRequest, Trace: "t1", Actor: "bot", Body: json.RawMessage(`{}`)}
		if _, err := stacks[i%3].db.Commit(ctx, e, custody.CreateApproval(a)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var expired atomic.Int64
	for range 2 {
		for _, st := range stacks {
			wg.Go(func() {
				k, err := st.approvals.ExpireDue(ctx)
				if err != nil {
					t.Error(err)
				}
				expired.Add(int64(k))
			})
		}
	}
	wg.Wait()
	if expired.Load() != n {
		t.Fatalf("the sweeps expired %d approvals, want %d", expired.Load(), n)
	}
	for _, kind := range []string{custody.KindApprovalExpired, custody.KindApprovalEscalate} {
		if es, err := stacks[1].db.Entries(ctx, custody.Query{Kind: kind}); err != nil || len(es) != n {
			t.Fatalf("%s entries: %d, %v; want %d", kind, len(es), err, n)
		}
	}
	for i := range 2 * n {
		id := fmt.Sprint("ap-", i)
		a, err := stacks[2].db.Approval(ctx, id)
		c, paged := hits.Load(id)
		switch {
		case err != nil:
			t.Fatal(err)
		case i < n && (a.Status != custody.ApprovalExpired || a.Escalations != 0 || paged):
			t.Fatalf("overdue approval %s = %+v (paged %v); want expired and nobody paged", id, a, paged)
		case i >= n && (a.Status != custody.ApprovalPending || a.Escalations != 1 || a.Channel != "sms"):
			t.Fatalf("approval %s = %+v; want pending, escalated once to sms", id, a)
		case i >= n && (!paged || c.(*atomic.Int64).Load() != 1):
			t.Fatalf("approval %s: the sms webhook was not called exactly once", id)
		}
	}
}

// TestServeLiveApprovalsAcrossInstances: a console on one instance hears
// at once of an approval asked and decided on another, and its stream
// does not hold up the instance's shutdown.
func TestServeLiveApprovalsAcrossInstances(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	a, _, stopA := startServe(t, env, "--data", filepath.Join(dir, "a"))
	defer stopA()
	b, _, stopB := startServe(t, env, "--data", filepath.Join(dir, "b"))
	events := approvalEvents(t, b, pgOperatorToken)
	call := `{"trace_id":"live","tool":"post_announcement","arguments":{"channel":"ops","message":"LIVE"}}`
	var pending struct {
		Error custody.ErrorDetail `json:"error"`
	}
	if err := json.Unmarshal([]byte(post(t, a+"/v1/calls", pgAgentToken, call, 202)), &pending); err != nil {
		t.Fatal(err)
	}
	id := pending.Error.ApprovalRequestID
	post(t, a+"/v1/approvals/"+id+"/decision", pgOperatorToken, `{"decision":"declined"}`, 200)
	for i := range 2 {
		select {
		case got := <-events:
			if got != id {
				t.Fatalf("event %d names %q, want %s", i, got, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d of %s did not reach the other instance", i, id)
		}
	}
	if code := stopB(); code != exitOK {
		t.Fatalf("instance with a live console exited %d", code)
	}
	for range events { // the stream ended with the instance
	}
}

func (r *receipts) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.list)
}
