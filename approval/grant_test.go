package approval_test

import (
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestSuggestGrant: the prefilled schema of a call allows calls like it:
// the same path prefix and no climbing out of it, the same recipient, up to
// the same amount, the same members and no others.
func TestSuggestGrant(t *testing.T) {
	raw, err := approval.SuggestGrant(json.RawMessage(`{"path":"notes/today.md","to":"ops@example.org","amount":250,"rate":1.5}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"amount":{"maximum":250,"type":"integer"},"path":{"pattern":"^notes/(?:[^/.][^/]*/)*[^/.][^/]*$","type":"string"},"rate":{"maximum":1.5,"type":"number"},"to":{"const":"ops@example.org"}},"required":["amount","path","rate","to"],"type":"object"}`
	if string(raw) != want {
		t.Fatalf("prefilled\n%s\nwant\n%s", raw, want)
	}
	sch, err := approval.CompileGrant(custody.Grant{ID: "g-1", Arguments: raw})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, args string
		ok         bool
	}{
		{"OK", `{"path":"notes/b.md","to":"ops@example.org","amount":250,"rate":1}`, true},
		{"OKBelow", `{"path":"notes/sub/c.md","to":"ops@example.org","amount":3,"rate":0.5}`, true},
		{"ErrOutside", `{"path":"other/b.md","to":"ops@example.org","amount":1,"rate":1}`, false},
		{"ErrClimbs", `{"path":"notes/../secrets","to":"ops@example.org","amount":1,"rate":1}`, false},
		{"ErrHidden", `{"path":"notes/.env","to":"ops@example.org","amount":1,"rate":1}`, false},
		{"ErrRecipient", `{"path":"notes/b.md","to":"all@example.org","amount":1,"rate":1}`, false},
		{"ErrCeiling", `{"path":"notes/b.md","to":"ops@example.org","amount":251,"rate":1}`, false},
		{"ErrExtra", `{"path":"notes/b.md","to":"ops@example.org","amount":1,"rate":1,"cc":"x"}`, false},
		{"ErrMissing", `{"path":"notes/b.md","to":"ops@example.org","amount":1}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := sch.Validate([]byte(tt.args))
			if (err == nil) != tt.ok {
				t.Errorf("validate %s: %v, want ok %v", tt.args, err, tt.ok)
			}
			if err != nil && custody.ErrorKind(err) != custody.EINVALID {
				t.Errorf("kind %q", custody.ErrorKind(err))
			}
		})
	}
	if _, err := approval.CompileGrant(custody.Grant{ID: "g-2", Arguments: json.RawMessage(`{"type":7}`)}); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("a schema that does not compile: %v", err)
	}
}
