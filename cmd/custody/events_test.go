package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// TestServeLiveApprovalsOnSQLite: on the embedded store too, the console's
// event stream hears at once of an approval asked and decided, and the
// stream does not hold up the server's shutdown.
func TestServeLiveApprovalsOnSQLite(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, nil, "--data", data)
	agent, operator := readToken(t, filepath.Join(data, agentTokenFile)), readToken(t, filepath.Join(data, operatorTokenFile))
	events := approvalEvents(t, base, operator)
	var pending struct {
		Error custody.ErrorDetail `json:"error"`
	}
	call := `{"trace_id":"live","tool":"post_announcement","arguments":{"channel":"ops","message":"LIVE"}}`
	if err := json.Unmarshal([]byte(post(t, base+"/v1/calls", agent, call, 202)), &pending); err != nil {
		t.Fatal(err)
	}
	id := pending.Error.ApprovalRequestID
	post(t, base+"/v1/approvals/"+id+"/decision", operator, `{"decision":"declined"}`, 200)
	for i := range 2 {
		select {
		case got := <-events:
			if got != id {
				t.Fatalf("event %d names %q, want %s", i, got, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("event %d of %s never came", i, id)
		}
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve with a live console exited %d", code)
	}
}

// approvalEvents opens the console's event stream of base as token and
// returns the approval ids it names, as they come; it closes when the
// stream ends.
func approvalEvents(t *testing.T, base, token string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("GET /v1/events: %d", res.StatusCode)
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- id
			}
		}
	}()
	return events
}
