package assure

import (
	"context"
	"crypto/sha256"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackTamperDetected changes one byte in each file of a pack in turn:
// verify must fail and name that file.
func TestPackTamperDetected(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	retest, err := Retest(context.Background(), orig.Dir, Config{OpenStore: openTestStore, Target: targetCareful, Out: filepath.Join(t.TempDir(), "retest")})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*Result{orig, retest} {
		names, err := os.ReadDir(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			t.Run(filepath.Base(res.Dir)+"/"+n.Name(), func(t *testing.T) {
				path := filepath.Join(res.Dir, n.Name())
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				bad := append([]byte(nil), raw...)
				i := len(bad) / 2
				bad[i] ^= 0x01
				if err := os.WriteFile(path, bad, 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.WriteFile(path, raw, 0o644)
				rep, err := VerifyPack(res.Dir)
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK() || !strings.HasPrefix(rep.Problems[0], n.Name()+":") {
					t.Fatalf("byte %d of %s changed: problems %q, want the first to name the file", i, n.Name(), rep.Problems)
				}
			})
		}
		if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() {
			t.Fatalf("restored pack: %v %v", err, rep.Problems)
		}
	}
}

// TestPackTamperExtraFile: a file added to a pack is named.
func TestPackTamperExtraFile(t *testing.T) {
	res := runPack(t, Config{Target: targetCareful, Cases: 1})
	if err := os.WriteFile(filepath.Join(res.Dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyPack(res.Dir)
	if err != nil || rep.OK() || !strings.HasPrefix(rep.Problems[0], "notes.txt:") {
		t.Fatalf("problems %v (%v), want notes.txt named", rep.Problems, err)
	}
}

// hashDir returns the SHA-256 of every file of dir.
func hashDir(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		out[n.Name()] = sha256.Sum256([]byte(readFile(t, dir, n.Name())))
	}
	return out
}

// TestRetestLeavesOriginalIntact: a retest reruns the same traces into a
// new pack that references the original by its ledger head; the original
// is byte for byte unchanged and still verifies.
func TestRetestLeavesOriginalIntact(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1, Repeat: 2})
	before := hashDir(t, orig.Dir)
	tests := []struct {
		name, target       string
		resolved, persists int
	}{
		{"CarefulResolvesAll", targetCareful, len(orig.Findings), 0},
		{"NaivePersists", targetNaive, 0, len(orig.Findings)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Retest(context.Background(), orig.Dir, Config{OpenStore: openTestStore, Target: tt.target, Out: filepath.Join(t.TempDir(), "pack2")})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Retest
			if r.Original.LedgerHead != orig.Info.LedgerHead || res.Info.RetestOf == nil || res.Info.RetestOf.LedgerHead != orig.Info.LedgerHead {
				t.Fatalf("retest does not reference the original head %s: %+v", orig.Info.LedgerHead, r.Original)
			}
			if r.Resolved != tt.resolved || r.Persists != tt.persists || r.New != 0 {
				t.Fatalf("resolved %d persists %d new %d, want %d %d 0", r.Resolved, r.Persists, r.New, tt.resolved, tt.persists)
			}
			if len(res.Traces) != len(orig.Traces) || res.Traces[0].Spec != orig.Traces[0].Spec {
				t.Fatalf("retest ran other traces: %+v vs %+v", res.Traces[0].Spec, orig.Traces[0].Spec)
			}
			rep, err := VerifyPack(res.Dir)
			if err != nil || !rep.OK() || !rep.OriginalChecked {
				t.Fatalf("verify retest: %v %v checked=%v", err, rep.Problems, rep.OriginalChecked)
			}
		})
	}
	after := hashDir(t, orig.Dir)
	if len(after) != len(before) {
		t.Fatalf("the original pack gained or lost files: %d -> %d", len(before), len(after))
	}
	for n, h := range before {
		if after[n] != h {
			t.Fatalf("the retest changed %s of the original", n)
		}
	}
	if rep, err := VerifyPack(orig.Dir); err != nil || !rep.OK() {
		t.Fatalf("original after retests: %v %v", err, rep.Problems)
	}
}

// TestRetestRefusesTamperedOriginal: a retest needs an intact original.
func TestRetestRefusesTamperedOriginal(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	path := filepath.Join(orig.Dir, FileFindings)
	if err := os.WriteFile(path, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Retest(context.Background(), orig.Dir, Config{OpenStore: openTestStore, Target: targetCareful, Out: filepath.Join(t.TempDir(), "pack2")})
	if err == nil || !strings.Contains(err.Error(), FileFindings) {
		t.Fatalf("retest of a tampered pack: %v", err)
	}
}

// TestWorldHasNoNetwork: the synthetic world and its tools import nothing
// that reaches the network.
func TestWorldHasNoNetwork(t *testing.T) {
	for _, file := range []string{"world.go", "tools.go", "inject.go", "news2.go", "synthetic.go", "scan.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "net" || strings.HasPrefix(path, "net/") || strings.Contains(path, "/llm") || strings.Contains(path, "/web") {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}

// TestRunIsDeterministic: one seed, one plan, one set of findings (down
// to the ledger seqs when the traces run one at a time).
func TestRunIsDeterministic(t *testing.T) {
	a := runPack(t, Config{Target: targetNaive, Cases: 1, Workers: 1})
	b := runPack(t, Config{Target: targetNaive, Cases: 1, Workers: 1})
	if string(indentJSON(a.Findings)) != string(indentJSON(b.Findings)) {
		t.Fatalf("two runs with one seed found different things:\n%s\n%s", indentJSON(a.Findings), indentJSON(b.Findings))
	}
}
