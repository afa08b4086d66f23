package assure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/upstream"
)

var _ systems.Host = cliHost{}

// cliHost is the program around the assure subcommands in these tests:
// a configuration file names one governed HTTP tool, and nothing else of
// the core is offered.
type cliHost struct {
	t    *testing.T
	tool string // the tool any --config offers
	url  string
	errw *bytes.Buffer
}

func (h cliHost) Registry(string) (*contract.Registry, error) { return LoadRegistry(nil) }
func (h cliHost) Open(context.Context, systems.Open) (*systems.Stack, error) {
	return nil, errors.New("not offered in these tests")
}
func (h cliHost) Ledger(string) (custody.Ledger, error) {
	return nil, errors.New("not offered in these tests")
}

// Upstreams offers the host's one tool for any configuration path.
func (h cliHost) Upstreams(_ context.Context, path string) (*upstream.Set, error) {
	if path == "" {
		return nil, nil
	}
	return openUpstream(h.t, h.tool, h.url), nil
}

func (h cliHost) Fail(err error) int {
	fmt.Fprintf(h.errw, "custody: %s\n", custody.ErrorMessage(err))
	return systems.ExitFailed
}

// runCLI runs custody assure args with a host offering tool under any
// --config, and returns the exit code, stdout and stderr.
func runCLI(t *testing.T, tool string, args ...string) (int, string, string) {
	t.Helper()
	var calls atomic.Int64
	srv := labServer(t, &calls, `{"potassium": 4.1}`)
	var out, errw bytes.Buffer
	env := systems.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errw, Getenv: func(string) string { return "" },
		Host: cliHost{t: t, tool: tool, url: srv.URL, errw: &errw}}
	code := cliAssure(context.Background(), env, args)
	return code, out.String(), errw.String()
}

// writeTemp writes raw to a new file and returns its path.
func writeTemp(t *testing.T, name string, raw []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLILintSaysWhatRunRefuses: a declared tool with no implementation
// is a warning naming the fix without --config, and an error with the
// --config that does not bind it; an injection on a tool the --config
// binds is an error too.
func TestCLILintSaysWhatRunRefuses(t *testing.T) {
	lab := writeTemp(t, "lab.json", withTool(t))
	ward := writeTemp(t, "ward.json", WardRoundEnvelope())
	config := writeTemp(t, "custody.json", []byte(`{}`))
	tests := []struct {
		name, tool string
		args       []string
		code       int
		says       string
	}{
		{"WarnUnboundWithoutConfig", "", []string{"lint", lab}, systems.ExitOK,
			"warning: tools[0] (get_lab_results): not a synthetic ward tool: 'assure run' refuses the envelope (declares tools without an implementation) unless its --config binds an upstream tool named get_lab_results; give lint that --config to check"},
		{"ErrUnboundWithConfig", "get_imaging", []string{"lint", "--config", config, lab}, systems.ExitFailed,
			"tools[0] (get_lab_results): no implementation: it is not a synthetic ward tool and the configuration binds no upstream tool named get_lab_results"},
		{"OKBoundWithConfig", "get_lab_results", []string{"lint", "--config", config, lab}, systems.ExitOK, "ok: DF-CAE-WARD-ROUND-001"},
		{"ErrInjectionOnBoundTool", "get_observations", []string{"lint", "--config", config, ward}, systems.ExitFailed,
			"failure_injections[0] (DF-INJ-DETERIORATION): DF-INJ-DETERIORATION (CLINICAL_DETERIORATION) acts on get_observations, which is bound upstream"},
		{"OKWard", "", []string{"lint", ward}, systems.ExitOK, "ok: DF-CAE-WARD-ROUND-001 0.1.0, 7 tools, 6 invariants (6 assessed), 6 injections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.tool, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("exit %d, want %d; stdout %q, want %q; stderr %s", code, tt.code, out, tt.says, errs)
			}
		})
	}
	t.Run("RunRefusesWhatLintWarned", func(t *testing.T) {
		code, _, errs := runCLI(t, "", "run", "--envelope", lab, "--target", targetCareful, "--cases", "1", "--data", t.TempDir(), "--out", filepath.Join(t.TempDir(), "p"))
		if code == systems.ExitOK || !strings.Contains(errs, "declares tools without an implementation: get_lab_results") {
			t.Fatalf("run: exit %d, stderr %s", code, errs)
		}
	})
}

// TestCLIUnassessed: lint warns and passes; run judges the rest, names
// the gap with its text and exits 1 unless --allow-unassessed.
func TestCLIUnassessed(t *testing.T) {
	const text = "A write is repeated at most three times."
	file := writeTemp(t, "env.json", envelopeWith(t, builtinIdempotent, `"`+text+`"`))
	code, out, _ := runCLI(t, "", "lint", file)
	if code != systems.ExitOK || !strings.Contains(out, "warning: safety_invariants[4] (DF-INV-NO-DUPLICATE-WRITE).rule: NOT ASSESSED") || !strings.Contains(out, "(5 assessed)") {
		t.Fatalf("lint: exit %d, stdout %s", code, out)
	}
	data := t.TempDir()
	run := func(extra ...string) (int, string) {
		args := append([]string{"run", "--envelope", file, "--target", targetCareful, "--cases", "1", "--data", data, "--out", filepath.Join(t.TempDir(), "p")}, extra...)
		code, _, errs := runCLI(t, "", args...)
		return code, errs
	}
	code, errs := run()
	if code != systems.ExitFailed || !strings.Contains(errs, `NOT ASSESSED DF-INV-NO-DUPLICATE-WRITE (IDEMPOTENCY) "`+text+`"`) ||
		!strings.Contains(errs, "nothing judged the AMBIGUOUS_WRITE_RESULT injections") || !strings.Contains(errs, "--allow-unassessed") {
		t.Fatalf("run: exit %d, stderr %s", code, errs)
	}
	code, errs = run("--allow-unassessed")
	if code != systems.ExitOK || !strings.Contains(errs, "NOT ASSESSED DF-INV-NO-DUPLICATE-WRITE") || !strings.Contains(errs, "warning: 1 invariants were not assessed") {
		t.Fatalf("run --allow-unassessed: exit %d, stderr %s", code, errs)
	}
}

// TestCLIVerifyPinsAssessor: verify --key or --pubkey fails a pack that
// another key signed, however consistent it is.
func TestCLIVerifyPinsAssessor(t *testing.T) {
	ward := writeTemp(t, "ward.json", WardRoundEnvelope())
	pack := func() (dir, fp string) {
		data, dir := t.TempDir(), filepath.Join(t.TempDir(), "p")
		if code, _, errs := runCLI(t, "", "run", "--envelope", ward, "--target", targetCareful, "--cases", "1", "--data", data, "--out", dir); code != systems.ExitOK {
			t.Fatalf("run: exit %d: %s", code, errs)
		}
		_, out, _ := runCLI(t, "", "key", "--data", data)
		return dir, strings.TrimSpace(out)
	}
	mine, myKey := pack()
	theirs, theirKey := pack()
	if myKey == theirKey {
		t.Fatal("two data directories share a key")
	}
	myPub := filepath.Join(mine, FilePublicKey)
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"OKPinnedKey", []string{"verify", "--key", myKey, mine}, systems.ExitOK, "signed by " + myKey + " (the pinned assessor key)"},
		{"OKPinnedKeyNoPrefix", []string{"verify", "--key", strings.TrimPrefix(myKey, "SHA256:"), mine}, systems.ExitOK, "(the pinned assessor key)"},
		{"OKPinnedPubkey", []string{"verify", "--pubkey", myPub, mine}, systems.ExitOK, "(the pinned assessor key)"},
		{"OKUnpinned", []string{"verify", theirs}, systems.ExitOK, "signed by " + theirKey},
		{"ErrOtherSigner", []string{"verify", "--key", myKey, theirs}, systems.ExitFailed,
			"FAIL ledger.pub: the pack is signed by " + theirKey + ", not by the pinned assessor key " + myKey},
		{"ErrOtherSignerPubkey", []string{"verify", "--pubkey", myPub, theirs}, systems.ExitFailed, "not by the pinned assessor key " + myKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", tt.args...)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("exit %d, want %d; stdout %q, want %q; stderr %s", code, tt.code, out, tt.says, errs)
			}
		})
	}
	for name, args := range map[string][]string{
		"ErrBadKey":  {"verify", "--key", "SHA256:abc", mine},
		"ErrBoth":    {"verify", "--key", myKey, "--pubkey", myPub, mine},
		"ErrNotAKey": {"verify", "--pubkey", ward, mine},
	} {
		t.Run(name, func(t *testing.T) {
			if code, _, errs := runCLI(t, "", args...); code != systems.ExitUsage || errs == "" {
				t.Fatalf("exit %d, want %d with the reason; stderr %q", code, systems.ExitUsage, errs)
			}
		})
	}
}

// TestVerifyPackWithPin: the library pins as the CLI does.
func TestVerifyPackWithPin(t *testing.T) {
	res, _ := signedPack(t, Config{Target: targetCareful, Cases: 1})
	other, _ := signedPack(t, Config{Target: targetCareful, Cases: 1})
	rep, err := VerifyPackWith(res.Dir, VerifyOptions{Key: res.Info.KeyFingerprint})
	if err != nil || !rep.OK() {
		t.Fatalf("own key: %v %v", err, rep.Problems)
	}
	rep, err = VerifyPackWith(other.Dir, VerifyOptions{Key: res.Info.KeyFingerprint})
	if err != nil {
		t.Fatal(err)
	}
	wantProblem(t, rep.Problems, FilePublicKey, "not by the pinned assessor key "+res.Info.KeyFingerprint)
	for _, bad := range []string{"", "SHA256:", "SHA256:zz" + strings.Repeat("0", 62), strings.Repeat("0", 63)} {
		if _, err := ParseFingerprint(bad); custody.ErrorKind(err) != custody.EINVALID {
			t.Errorf("ParseFingerprint(%q): %v, want EINVALID", bad, err)
		}
	}
	if fp, err := ParseFingerprint(" " + strings.ToUpper(strings.TrimPrefix(res.Info.KeyFingerprint, "SHA256:"))); err != nil || fp != res.Info.KeyFingerprint {
		t.Errorf("ParseFingerprint of the bare upper-case hex: %q %v", fp, err)
	}
}
