package systems_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/upstream"
)

// failHost fails as a program would: one line naming the error's kind,
// and ExitFailed.
type failHost struct{ stderr io.Writer }

func (failHost) Registry(string) (*contract.Registry, error) { return nil, errors.New("no registry") }
func (failHost) Open(context.Context, systems.Open) (*systems.Stack, error) {
	return nil, errors.New("no stack")
}
func (failHost) Ledger(string) (custody.Ledger, error) { return nil, errors.New("no ledger") }
func (failHost) Upstreams(context.Context, string) (*upstream.Set, error) {
	return nil, nil
}
func (h failHost) Fail(err error) int {
	h.stderr.Write([]byte("custody: " + custody.ErrorKind(err) + "\n"))
	return systems.ExitFailed
}

func testEnv(stdin string, vars map[string]string) (systems.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return systems.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] }, Host: failHost{&errb}}, &out, &errb
}

// TestEnvSetting: a setting that is unset or blank takes its default.
func TestEnvSetting(t *testing.T) {
	env, _, _ := testEnv("", map[string]string{"SET": " x ", "BLANK": "  "})
	for name, want := range map[string]string{"SET": "x", "BLANK": "def", "UNSET": "def"} {
		if got := env.Setting(name, "def"); got != want {
			t.Errorf("Setting(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestEnvParse: -h goes on with ExitOK, a bad flag stops with ExitUsage,
// and both print the usage line.
func TestEnvParse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		ok   bool
		code int
	}{
		{"OK", []string{"--data", "d"}, true, systems.ExitOK},
		{"Help", []string{"-h"}, false, systems.ExitOK},
		{"ErrUnknownFlag", []string{"--nope"}, false, systems.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _, errb := testEnv("", map[string]string{"CUSTODY_DATA": "from-env"})
			fs := env.Flags("thing do", "[--data DIR]")
			data := env.DataFlag(fs)
			ok, code := env.Parse(fs, tt.args)
			if ok != tt.ok || code != tt.code {
				t.Fatalf("Parse = %v, %d; want %v, %d", ok, code, tt.ok, tt.code)
			}
			if ok && *data != "d" {
				t.Errorf("--data = %q", *data)
			}
			if !ok && !strings.Contains(errb.String(), "usage: custody thing do [--data DIR]") {
				t.Errorf("stderr lacks the usage line:\n%s", errb)
			}
			if !ok && !strings.Contains(errb.String(), `(default "from-env")`) {
				t.Errorf("--data does not default to $CUSTODY_DATA:\n%s", errb)
			}
		})
	}
}

// TestEnvReadInput: "-" reads stdin, a file that is not there is an
// error.
func TestEnvReadInput(t *testing.T) {
	env, _, _ := testEnv(`{"a":1}`, nil)
	if raw, err := env.ReadInput("-"); err != nil || string(raw) != `{"a":1}` {
		t.Errorf("ReadInput(-) = %q, %v", raw, err)
	}
	if _, err := env.ReadInput("/nonexistent/x.json"); err == nil {
		t.Error("a missing file was read")
	}
}

// TestEnvFailViolations: the failure, then each violation on a line, the
// document's root named as such; LoadFailed exits with ExitUsage.
func TestEnvFailViolations(t *testing.T) {
	env, _, errb := testEnv("", nil)
	err := &custody.Error{Kind: custody.EINVALID, Message: "bad", Violations: []custody.Violation{
		{Instance: "", Message: "missing x"}, {Instance: "/y", Message: "not a number"}}}
	if code := env.FailViolations(err); code != systems.ExitFailed {
		t.Errorf("FailViolations = %d", code)
	}
	want := "custody: invalid\n  (root): missing x\n  /y: not a number\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb, want)
	}
	if code := env.LoadFailed(err); code != systems.ExitUsage {
		t.Errorf("LoadFailed = %d, want %d", code, systems.ExitUsage)
	}
}

// TestIsTerminal: a buffer is no terminal.
func TestIsTerminal(t *testing.T) {
	if systems.IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}
