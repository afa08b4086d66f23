package systems_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/custody-dev/custody/systems"
)

func TestDispatch(t *testing.T) {
	var got []string
	subs := map[string]systems.Subcommand{
		"lint":         {Summary: "check it", Run: func(_ context.Context, _ systems.Env, args []string) int { got = args; return 7 }},
		"check-schema": {Summary: "check the schema", Run: func(context.Context, systems.Env, []string) int { return 0 }},
	}
	for name, c := range map[string]struct {
		args []string
		code int
		out  string
	}{
		"OK":           {[]string{"lint", "a", "b"}, 7, ""},
		"Help":         {[]string{"--help"}, systems.ExitOK, "usage: custody x SUBCOMMAND"},
		"ErrNone":      {nil, systems.ExitUsage, "usage: custody x SUBCOMMAND"},
		"ErrUnknown":   {[]string{"lnit"}, systems.ExitUsage, `custody x: unknown subcommand "lnit"`},
		"UsageColumns": {[]string{"-h"}, systems.ExitOK, "  check-schema  check the schema\n  lint          check it\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			got = nil
			code := systems.Env{Stderr: &stderr}.Dispatch(context.Background(), "x", subs, c.args)
			if code != c.code || !strings.Contains(stderr.String(), c.out) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), c.code, c.out)
			}
			if name == "OK" && strings.Join(got, " ") != "a b" {
				t.Errorf("the subcommand got %q", got)
			}
		})
	}
}
