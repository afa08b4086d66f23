package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/web"
)

// TestEventsNotFoundWithoutSharedStore: without live changes the stream is
// not found and the console polls.
func TestEventsNotFoundWithoutSharedStore(t *testing.T) {
	e := newEnv(t)
	if r := e.do("GET", "/v1/events", operatorToken, nil); r.Status != http.StatusNotFound {
		t.Fatalf("GET /v1/events: %d, want 404", r.Status)
	}
}

// TestEventsStreamApprovalChanges streams each changed approval's id as a
// server-sent event to operators and auditors, never to agents, and ends
// when the changes do.
func TestEventsStreamApprovalChanges(t *testing.T) {
	e := newEnv(t)
	ids := make(chan string, 2)
	tokens, err := web.ParseTokens("agent-1:"+agentToken, "op-1:"+operatorToken, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{Gateway: e.gw, Approvals: e.approvals, Ledger: e.db, Sessions: e.db, Tokens: tokens,
		ApprovalChanges: func(context.Context) (<-chan string, error) { return ids, nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(token string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := get(agentToken); res.StatusCode != http.StatusForbidden {
		t.Fatalf("an agent's GET /v1/events: %d, want 403", res.StatusCode)
	}
	res := get(operatorToken)
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ids <- "ap-1"
	ids <- "ap-2"
	close(ids)
	var got []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, id)
		}
	}
	if strings.Join(got, " ") != "ap-1 ap-2" {
		t.Fatalf("events = %v, want ap-1 ap-2 then the end", got)
	}
}

// TestEventsOutlastServerTimeouts: the event stream keeps going past the
// server's write and read timeouts, each event bounded on its own. The
// timeouts are long enough for any machine to read a request within
// them; the events after the first wait until both have passed.
func TestEventsOutlastServerTimeouts(t *testing.T) {
	const timeout = time.Second
	e := newEnv(t)
	ids := make(chan string)
	tokens, err := web.ParseTokens("", "op-1:"+operatorToken, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{Gateway: e.gw, Approvals: e.approvals, Ledger: e.db, Sessions: e.db, Tokens: tokens,
		EventWriteTimeout: 10 * time.Second, ApprovalChanges: func(context.Context) (<-chan string, error) { return ids, nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.WriteTimeout, srv.Config.ReadTimeout = timeout, timeout
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	go func() {
		ids <- "ap-1"
		// The request was read before its answer began: the timeouts
		// have passed by the time this sleep ends.
		time.Sleep(timeout + 200*time.Millisecond)
		ids <- "ap-2"
		ids <- "ap-3"
		close(ids)
	}()
	var got []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, id)
		}
	}
	if strings.Join(got, " ") != "ap-1 ap-2 ap-3" {
		t.Fatalf("events = %v, want all three, the last two past the stream's %s server timeouts", got, timeout)
	}
}
