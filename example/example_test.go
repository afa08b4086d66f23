package example_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/sqlite"
)

func setup(t *testing.T) (*gate.Gateway, *approval.Service, *sqlite.DB) {
	t.Helper()
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw}})
	if err != nil {
		t.Fatalf("load the example contract: %v", err)
	}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := func() time.Time { return time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) }
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db, Now: now}, example.EnvelopeID, example.Tools(db, now))
	if err != nil {
		t.Fatalf("the example envelope does not build a gateway: %v", err)
	}
	return gw, svc, db
}

func call(gw *gate.Gateway, trace, tool, args string) (custody.Result, error) {
	return gw.Call(context.Background(), custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(args), Actor: "test"})
}

func TestTools(t *testing.T) {
	gw, _, db := setup(t)
	tests := []struct {
		name, tool, args string
		kind             string
	}{
		{name: "OKTime", tool: "get_time", args: `{}`},
		{name: "OKTimeZone", tool: "get_time", args: `{"zone":"UTC"}`},
		{name: "ErrTimeExtraField", tool: "get_time", args: `{"zone":"UTC","format":"unix"}`, kind: custody.EINVALID},
		{name: "OKNote", tool: "write_note", args: `{"title":"Standup","text":"Moved to 10:00."}`},
		{name: "ErrNoteMissingText", tool: "write_note", args: `{"title":"Standup"}`, kind: custody.EINVALID},
		{name: "ErrNoteTitleTooLong", tool: "write_note", args: `{"title":"` + strings.Repeat("x", 81) + `","text":"x"}`, kind: custody.EINVALID},
		{name: "ErrAnnouncementLowercase", tool: "post_announcement", args: `{"channel":"ops","message":"hello"}`, kind: custody.EINVALID},
		{name: "ErrAnnouncementChannel", tool: "post_announcement", args: `{"channel":"everyone","message":"HELLO"}`, kind: custody.EINVALID},
		{name: "ErrAnnouncementHeld", tool: "post_announcement", args: `{"channel":"ops","message":"HELLO"}`, kind: custody.EPENDING},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := call(gw, "trace-"+tt.name, tt.tool, tt.args)
			if got := custody.ErrorKind(err); got != tt.kind {
				t.Fatalf("kind = %q (%v), want %q", got, err, tt.kind)
			}
			if err == nil && len(res.Output) == 0 {
				t.Fatal("no output")
			}
		})
	}
	notes, err := db.States(context.Background(), example.NotesNamespace)
	if err != nil || len(notes) != 1 {
		t.Fatalf("notes = %v, %v; want the one written", notes, err)
	}
}

func TestAnnouncementAfterApproval(t *testing.T) {
	gw, svc, db := setup(t)
	args := `{"channel":"ops","message":"RELEASE AT 5"}`
	_, err := call(gw, "trace-a", "post_announcement", args)
	if custody.ErrorKind(err) != custody.EPENDING {
		t.Fatalf("first call: %v, want pending", err)
	}
	ce := custody.AsError(err)
	edited := json.RawMessage(`{"channel":"ops","message":"RELEASE AT 6"}`)
	if _, err := svc.Decide(context.Background(), ce.ApprovalRequestID, approval.Decision{Decision: approval.Approve, Operator: "op", Arguments: edited}); err != nil {
		t.Fatal(err)
	}
	res, err := call(gw, "trace-a", "post_announcement", string(edited))
	if err != nil {
		t.Fatalf("approved call: %v", err)
	}
	var out struct {
		ID      string `json:"announcement_id"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Message != "RELEASE AT 6" {
		t.Fatalf("output = %s", res.Output)
	}
	if _, err := db.State(context.Background(), example.BoardNamespace, out.ID); err != nil {
		t.Fatalf("the announcement is not on the board: %v", err)
	}
}

func TestContract(t *testing.T) {
	name, raw := example.Contract()
	if name != "example.json" || !json.Valid(raw) {
		t.Fatalf("Contract() = %q, %d bytes", name, len(raw))
	}
	raw[0] = 'x'
	if _, again := example.Contract(); again[0] == 'x' {
		t.Fatal("Contract returns the embedded bytes themselves")
	}
	if tools := example.Tools(nil, nil); len(tools) != 3 {
		t.Fatalf("%d example tools, want 3", len(tools))
	}
}
