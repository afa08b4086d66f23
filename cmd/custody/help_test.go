package main

import (
	"strings"
	"testing"
)

// TestSubcommandHelp: every command with subcommands answers -h, --help
// and help with its usage and exit 0, and nothing with exit 2.
func TestSubcommandHelp(t *testing.T) {
	for _, cmd := range []string{"config", "approvals", "ledger"} {
		for _, h := range []string{"-h", "--help", "help"} {
			code, out, errOut := runMain(t, nil, "", cmd, h)
			if code != exitOK || !strings.Contains(errOut+out, "usage: custody "+cmd) || strings.Contains(errOut, "unknown subcommand") {
				t.Errorf("custody %s %s: exit %d, %s%s", cmd, h, code, out, errOut)
			}
		}
		if code, _, errOut := runMain(t, nil, "", cmd); code != exitUsage || !strings.Contains(errOut, "usage: custody "+cmd) {
			t.Errorf("custody %s: exit %d, %s", cmd, code, errOut)
		}
	}
}
