package custody_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestCheckChanges(t *testing.T) {
	approved := custody.Approval{ID: "a1", Status: custody.ApprovalApproved}
	cases := map[string]struct {
		change custody.Change
		want   string // "" when the change is well formed
	}{
		"OK/PutState":             {custody.PutState("ns", "k", json.RawMessage(`{"a":1}`)), ""},
		"OK/IncrState":            {custody.IncrState("ns", "k", 1, 10), ""},
		"OK/CreateApproval":       {custody.CreateApproval(approved), ""},
		"OK/UpdateApproval":       {custody.UpdateApproval(approved, custody.ApprovalPending), ""},
		"OK/ConsumeApproval":      {custody.ConsumeApproval("a1"), ""},
		"OK/PutStateLimitIgnored": {custody.Change{Op: custody.OpPutState, NS: "ns", Key: "k", Doc: json.RawMessage(`1`), Limit: -1}, ""},
		"ErrUnknownOp":            {custody.Change{Op: 99, NS: "ns", Key: "k"}, "change 0: unknown operation 99"},
		"ErrBadJSON":              {custody.PutState("ns", "k", json.RawMessage(`{`)), "change 0: state ns/k: the document is not valid JSON"},
		"ErrNoNamespace":          {custody.PutState("", "k", json.RawMessage(`1`)), "change 0: state needs a namespace and a key"},
		"ErrNoKey":                {custody.IncrState("ns", "", 1, 0), "change 0: state needs a namespace and a key"},
		"ErrNegativeLimit":        {custody.IncrState("ns", "k", 1, -1), "change 0: state ns/k: limit -1 is negative"},
		"ErrApprovalNoID":         {custody.CreateApproval(custody.Approval{Status: custody.ApprovalPending}), "change 0: approval: id and status are required"},
		"ErrApprovalNoStatus":     {custody.CreateApproval(custody.Approval{ID: "a1"}), "change 0: approval: id and status are required"},
		"ErrUpdateWithoutFrom":    {custody.UpdateApproval(approved, ""), "change 0: approval a1: the status it must have is missing"},
		"ErrConsumeWithoutID":     {custody.ConsumeApproval(""), "change 0: approval: id is required"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := custody.CheckChanges([]custody.Change{c.change})
			if c.want == "" {
				if err != nil || len(out) != 1 {
					t.Fatalf("CheckChanges = %v, %v", out, err)
				}
				return
			}
			if custody.ErrorKind(err) != custody.EINVALID || custody.ErrorMessage(err) != c.want || out != nil {
				t.Fatalf("CheckChanges = %v, %v; want EINVALID %q", out, err, c.want)
			}
		})
	}
}

// TestCheckChangesNamesTheIndexAndCopies: the error names the change by
// its place, and the copies do not share the caller's buffers.
func TestCheckChangesNamesTheIndexAndCopies(t *testing.T) {
	doc := json.RawMessage(`{"n":1}`)
	ok := custody.PutState("ns", "k", doc)
	if _, err := custody.CheckChanges([]custody.Change{ok, ok, custody.ConsumeApproval("")}); err == nil || !strings.HasPrefix(custody.ErrorMessage(err), "change 2:") {
		t.Fatalf("err = %v, want one naming change 2", err)
	}
	out, err := custody.CheckChanges([]custody.Change{ok})
	if err != nil {
		t.Fatal(err)
	}
	doc[2] = 'X'
	if string(out[0].Doc) != `{"n":1}` {
		t.Errorf("the copy shares the caller's buffer: %s", out[0].Doc)
	}
	if out, err := custody.CheckChanges(nil); out != nil || err != nil {
		t.Errorf("no changes: %v, %v", out, err)
	}
}

func TestChangeRefused(t *testing.T) {
	refusal := custody.Errorf(custody.EDENIED, "budget spent")
	with := custody.Change{Refusal: refusal}
	for _, c := range []struct {
		name   string
		change custody.Change
		err    error
		want   error
	}{
		{"Conflict", with, custody.Errorf(custody.ECONFLICT, "taken"), refusal},
		{"Denied", with, custody.Errorf(custody.EDENIED, "limit"), refusal},
		{"InvalidKept", with, custody.Errorf(custody.EINVALID, "not a number"), nil},
		{"UnavailableKept", with, custody.Errorf(custody.EUNAVAILABLE, "disk"), nil},
		{"NoRefusal", custody.Change{}, custody.Errorf(custody.ECONFLICT, "taken"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.change.Refused(c.err)
			want := c.want
			if want == nil {
				want = c.err
			}
			if !errors.Is(got, want) || got != want {
				t.Errorf("Refused(%v) = %v, want %v", c.err, got, want)
			}
		})
	}
}
