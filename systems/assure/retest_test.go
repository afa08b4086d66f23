package assure

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestCompareFindings(t *testing.T) {
	f := func(id, trace, summary string) Finding {
		return Finding{FindingID: id, InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: trace, Summary: summary}
	}
	ref := &RetestRef{Pack: "orig", LedgerHead: "head", ManifestSHA256: "sum", findings: []Finding{
		f("F-1", "t1", "was"), f("F-2", "t2", "was"), f("F-3", "t3", "was"), f("F-4", "t4", "was"),
	}}
	now := []Finding{f("F-2", "t2", "still"), f("F-5", "t5", "new"), f("F-3", "t3", "again")}
	rep := compareFindings(ref, now, map[string]bool{"t4": true, "t5": true})
	want := []RetestStatus{
		{Status: statusResolved, FindingID: "F-1", InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: "t1", Summary: "was"},
		{Status: statusPersists, FindingID: "F-2", InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: "t2", Summary: "still"},
		{Status: statusPersists, FindingID: "F-3", InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: "t3", Summary: "again"},
		{Status: statusErrored, FindingID: "F-4", InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: "t4", Summary: "was"},
		{Status: statusNew, FindingID: "F-5", InvariantID: invHumanDecides, Severity: "CRITICAL", InjectionID: "DF-INJ-X", TraceID: "t5", Summary: "new"},
	}
	if !slices.Equal(rep.Findings, want) {
		t.Fatalf("statuses\n%+v\nwant\n%+v", rep.Findings, want)
	}
	if rep.Resolved != 1 || rep.Persists != 2 || rep.NotRetested != 1 || rep.New != 1 {
		t.Fatalf("counts %+v", rep)
	}
	if rep.Original.Pack != "orig" || rep.Original.LedgerHead != "head" || rep.Original.ManifestSHA256 != "sum" {
		t.Fatalf("original %+v", rep.Original)
	}
	if ref.findings[1].Summary != "was" {
		t.Fatal("the comparison changed the original findings")
	}
	if empty := compareFindings(&RetestRef{}, nil, nil); empty.Findings == nil || len(empty.Findings) != 0 {
		t.Fatal("no findings must be an empty list, not null")
	}
}

// TestRetestRefusals: a retest runs only against an intact original that
// it can leave untouched.
func TestRetestRefusals(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	before := hashDir(t, orig.Dir)
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		out  func(t *testing.T) string
		kind string
		says string
	}{
		{"ErrNoOriginal", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, nil, custody.ENOTFOUND, "no evidence pack"},
		{"ErrOutIsTheOriginal", nil, func(*testing.T) string { return orig.Dir }, custody.ECONFLICT, "inside the original pack"},
		{"ErrOutInsideTheOriginal", nil, func(*testing.T) string { return filepath.Join(orig.Dir, "retest") }, custody.ECONFLICT, "the original is never modified"},
		{"ErrOutInsideByAnotherSpelling", nil, func(*testing.T) string {
			sep := string(filepath.Separator)
			return orig.Dir + sep + ".." + sep + filepath.Base(orig.Dir) + sep + "x" + sep + ".." + sep + "retest"
		}, custody.ECONFLICT, "inside the original pack"},
		{"ErrNoOut", nil, func(*testing.T) string { return "" }, custody.EINVALID, "no pack directory"},
		{"ErrOutNotEmpty", nil, func(t *testing.T) string {
			dir := t.TempDir()
			writePackFile(t, dir, "x", []byte("x"))
			return dir
		}, custody.ECONFLICT, "is not empty"},
		{"ErrUnknownTarget", nil, nil, custody.EINVALID, `target "scripted:reckless"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, out := orig.Dir, filepath.Join(t.TempDir(), "retest")
			if tt.dir != nil {
				dir = tt.dir(t)
			}
			if tt.out != nil {
				out = tt.out(t)
			}
			target := targetCareful
			if tt.name == "ErrUnknownTarget" {
				target = "scripted:reckless"
			}
			_, err := Retest(context.Background(), dir, Config{OpenStore: openTestStore, Target: target, Out: out})
			if custody.ErrorKind(err) != tt.kind || !strings.Contains(custody.ErrorMessage(err), tt.says) {
				t.Fatalf("retest: %v, want %s saying %q", err, tt.kind, tt.says)
			}
		})
	}
	after := hashDir(t, orig.Dir)
	if len(after) != len(before) {
		t.Fatalf("the refused retests changed the files of the original: %d -> %d", len(before), len(after))
	}
	for n, h := range before {
		if after[n] != h {
			t.Fatalf("a refused retest changed %s", n)
		}
	}
	if ps := problemsOf(t, orig.Dir); len(ps) != 0 {
		t.Fatalf("the original no longer verifies: %v", ps)
	}
}

// TestRetestRefusesUnverifiedOriginal: every way an original fails verify
// refuses the retest, naming the problem.
func TestRetestRefusesUnverifiedOriginal(t *testing.T) {
	orig, priv := signedPack(t, Config{Target: targetNaive, Cases: 1})
	tests := []struct {
		name   string
		change func(dir string)
		says   string
	}{
		{"ErrManifestMissing", func(dir string) { removePackFile(t, dir, FileManifest) }, "manifest.json: missing"},
		{"ErrLedgerChanged", func(dir string) { writePackFile(t, dir, FileLedger, []byte("{}\n")) }, "ledger.jsonl: SHA-256 does not match"},
		{"ErrResignedFindings", func(dir string) {
			resign(t, dir, priv, func(fs map[string][]byte) { fs[FileFindings] = []byte("[]\n") })
		}, "findings.json: does not match the findings re-evaluated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPack(t, orig.Dir)
			tt.change(dir)
			_, err := Retest(context.Background(), dir, Config{OpenStore: openTestStore, Target: targetCareful, Out: filepath.Join(t.TempDir(), "retest")})
			if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "the original pack does not verify ("+tt.says) {
				t.Fatalf("retest: %v, want EINVALID naming %q", err, tt.says)
			}
		})
	}
	t.Run("ErrSeedUnreadable", func(t *testing.T) {
		// Only the assessor's key could sign this; verify does not read
		// the seed, the retest must.
		dir := copyPack(t, orig.Dir)
		resign(t, dir, priv, func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) { d["seed"] = "seven" })
		})
		if ps := problemsOf(t, dir); len(ps) != 0 {
			t.Fatalf("verify: %v", ps)
		}
		_, err := Retest(context.Background(), dir, Config{OpenStore: openTestStore, Target: targetCareful, Out: filepath.Join(t.TempDir(), "retest")})
		if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), `run.json: seed "seven"`) {
			t.Fatalf("retest: %v, want EINVALID naming the seed", err)
		}
	})
}

// TestRetestRerunsThePlan: a retest takes the envelope, seed, cases and
// repeats from the original, whatever its configuration says.
func TestRetestRerunsThePlan(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1, Seed: 11})
	other := strings.Replace(string(WardRoundEnvelope()), `"version": "0.1.0"`, `"version": "0.2.0"`, 1)
	res, err := Retest(context.Background(), orig.Dir, Config{OpenStore: openTestStore, Target: targetNaive, Out: filepath.Join(t.TempDir(), "retest"),
		Envelope: []byte(other), Seed: 99, Cases: 3, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Info.Seed != "11" || res.Info.Cases != 1 || res.Info.Repeat != 1 || res.Info.EnvelopeSHA256 != orig.Info.EnvelopeSHA256 || res.Info.EnvelopeVersion != "0.1.0" {
		t.Fatalf("retest run %+v, want the original's plan", res.Info)
	}
	if len(res.Traces) != len(orig.Traces) {
		t.Fatalf("%d traces, want the original's %d", len(res.Traces), len(orig.Traces))
	}
	for i := range res.Traces {
		if res.Traces[i].Spec != orig.Traces[i].Spec {
			t.Fatalf("trace %d: %+v, want %+v", i, res.Traces[i].Spec, orig.Traces[i].Spec)
		}
	}
	r := res.Retest
	if r.Persists != len(orig.Findings) || r.Resolved != 0 || r.New != 0 || r.NotRetested != 0 {
		t.Fatalf("a naive retest of a naive run: %+v", r)
	}
	if !strings.Contains(readFile(t, res.Dir, FileVerify), "## Retest") || !strings.Contains(readFile(t, res.Dir, FileRetest), orig.Info.LedgerHead) {
		t.Fatal("the retest pack does not name its original")
	}
	if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() || !rep.OriginalChecked || rep.RetestOf == nil || rep.RetestOf.LedgerHead != orig.Info.LedgerHead {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestVerifyRetestAgainstItsOriginal: a retest pack names its original;
// when that original is at hand it must be the one named, and the
// statuses must follow from both.
func TestVerifyRetestAgainstItsOriginal(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	var k keptKeys
	res, err := Retest(context.Background(), orig.Dir, Config{OpenStore: k.open, Target: targetCareful, Out: filepath.Join(t.TempDir(), "retest")})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ErrStatusesEdited", func(t *testing.T) {
		dir := copyPack(t, res.Dir)
		resign(t, dir, k.key(), func(fs map[string][]byte) {
			fs[FileRetest] = []byte(strings.ReplaceAll(string(fs[FileRetest]), `"status": "resolved"`, `"status": "persists"`))
		})
		wantProblem(t, problemsOf(t, dir), FileRetest, "the finding statuses do not follow from the original and the retest findings")
	})
	t.Run("ErrOriginalReplaced", func(t *testing.T) {
		// Another run put where the original was: not the pack referenced.
		other := runPack(t, Config{Target: targetNaive, Cases: 1, Seed: 8})
		dir := copyPack(t, res.Dir)
		resign(t, dir, k.key(), func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) { d["retest_of"].(map[string]any)["pack"] = other.Dir })
		})
		wantProblem(t, problemsOf(t, dir), FileRetest, "the original pack at "+other.Dir+" is not the one referenced (ledger head "+orig.Info.LedgerHead+")")
	})
	t.Run("OKOriginalAway", func(t *testing.T) {
		// Sent on its own, a retest pack stands on its own record.
		dir := copyPack(t, res.Dir)
		resign(t, dir, k.key(), func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) {
				d["retest_of"].(map[string]any)["pack"] = filepath.Join(t.TempDir(), "elsewhere")
			})
		})
		rep, err := VerifyPack(dir)
		if err != nil || !rep.OK() || rep.OriginalChecked {
			t.Fatalf("verify: %v %v, checked %v; want OK, the original unchecked", err, rep.Problems, rep.OriginalChecked)
		}
	})
}

func TestReadOriginal(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	info, findings, env, man, err := readOriginal(orig.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.LedgerHead != orig.Info.LedgerHead || len(findings) != len(orig.Findings) || string(env) != string(WardRoundEnvelope()) || len(man) == 0 {
		t.Fatalf("read %+v, %d findings", info, len(findings))
	}
	for _, name := range []string{FileRun, FileEnvelope, FileManifest, FileFindings} {
		t.Run("Err"+name, func(t *testing.T) {
			dir := copyPack(t, orig.Dir)
			removePackFile(t, dir, name)
			if _, _, _, _, err := readOriginal(dir); custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "read "+name) {
				t.Fatalf("readOriginal without %s: %v", name, err)
			}
		})
	}
	t.Run("ErrFindingsNotJSON", func(t *testing.T) {
		dir := copyPack(t, orig.Dir)
		writePackFile(t, dir, FileFindings, []byte("{"))
		if _, _, _, _, err := readOriginal(dir); custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("readOriginal: %v", err)
		}
	})
}

func TestWithin(t *testing.T) {
	base, sep := t.TempDir(), string(filepath.Separator)
	tests := []struct {
		path string
		want bool
	}{
		{base, true},
		{filepath.Join(base, "a"), true},
		{filepath.Join(base, "a", "b"), true},
		{base + sep + "a" + sep + ".." + sep + ".." + sep + filepath.Base(base) + sep + "c", true},
		{base + sep + "a" + sep + ".." + sep + "..", false},
		{filepath.Join(base, ".."), false},
		{base + "-sibling", false},
		{filepath.Join(base, "..", "..hidden"), false},
		{"", false},
	}
	for _, tt := range tests {
		if got := within(tt.path, base); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", tt.path, base, got, tt.want)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if !within("testdata", wd) || within(wd, "testdata") {
		t.Error("within resolves relative paths against the working directory")
	}
}

func TestErroredTraces(t *testing.T) {
	ts := []*Trace{
		{Spec: TraceSpec{TraceID: "a"}, Finished: &finished{}},
		{Spec: TraceSpec{TraceID: "b"}},
		{Spec: TraceSpec{TraceID: "c"}, Finished: &finished{Error: "boom"}},
		{Spec: TraceSpec{TraceID: "d"}, Finished: &finished{Error: dataPolicyStop{}.Error()}},
	}
	got := erroredTraces(ts)
	if len(got) != 2 || !got["b"] || !got["c"] {
		t.Fatalf("errored %v, want b and c", got)
	}
}
