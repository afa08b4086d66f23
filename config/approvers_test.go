package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// TestApprovers: a tool's approvers are "console" and "client", listed
// with operators among them; anything else is refused with its path, and
// a tool that lists none is decided by operators alone.
func TestApprovers(t *testing.T) {
	policy := func(approvers string) string {
		return `{"tools":{"fs__edit_file":{"access":"WRITE","effect":"CONSEQUENTIAL","approvers":` + approvers + `}}}`
	}
	t.Run("OK", func(t *testing.T) {
		f, err := Parse([]byte(policy(`["console","client"]`)), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Upstream().Governance["fs__edit_file"].Approvers; !slices.Equal(got, []string{custody.ApproverConsole, custody.ApproverClient}) {
			t.Fatalf("approvers %v", got)
		}
	})
	t.Run("LeftOut", func(t *testing.T) {
		f, err := Parse([]byte(`{"tools":{"x":{"access":"WRITE","effect":"CONSEQUENTIAL"}}}`), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Upstream().Governance["x"].Approvers; got != nil {
			t.Fatalf("approvers %v, want none (operators only)", got)
		}
	})
	for _, tc := range []struct{ name, approvers, want string }{
		{"ErrEmpty", `[]`, "/tools/fs__edit_file/approvers"},
		{"ErrUnknown", `["console","slack"]`, "/tools/fs__edit_file/approvers/1"},
		{"ErrNotAList", `"client"`, "/tools/fs__edit_file/approvers"},
		{"ErrTwice", `["console","console"]`, "/tools/fs__edit_file/approvers"},
		{"ErrWithoutOperators", `["client"]`, `/tools/fs__edit_file/approvers: an operator can always decide a held call: list "console" too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(policy(tc.approvers)), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("approvers %s: %v, want an error naming %s", tc.approvers, err, tc.want)
			}
		})
	}
	// The check behind the schema says what it refuses the same way.
	if err := checkApprovers("a/b", []string{"console", "pager"}); err == nil || !strings.Contains(err.Error(), `/tools/a~1b/approvers/1: "pager" is not an approver`) {
		t.Fatalf("checkApprovers: %v", err)
	}
}
