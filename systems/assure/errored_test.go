package assure

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// unreachableTarget returns a model URL nothing listens at: a server's
// address, the server closed.
func unreachableTarget(t *testing.T) string {
	srv := httptest.NewServer(nil)
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	return "openai://" + addr + "/v1/gone"
}

// TestUnreachableTargetErrors: with the model unreachable no trace runs.
// Every trace is an error, none a pass: no rate and no pass^k is computed
// over them, and the pack says so and still verifies.
func TestUnreachableTargetErrors(t *testing.T) {
	res := runPack(t, Config{Target: unreachableTarget(t), Cases: 1})
	met := res.Info.Metrics
	if met.Errored != 7 || len(res.Errored()) != 7 || len(res.Findings) != 0 {
		t.Fatalf("errored %d (%d traces), findings %d; want 7 errored traces", met.Errored, len(res.Errored()), len(res.Findings))
	}
	for _, tr := range res.Errored() {
		if !strings.Contains(tr.Err(), "unreachable") {
			t.Errorf("trace %s: error %q does not say the target was unreachable", tr.Spec.TraceID, tr.Err())
		}
	}
	for _, c := range met.Categories {
		if c.Errored != c.Traces || c.PassKCases != 0 || c.PassK != 0 || c.BreachRate != 0 {
			t.Errorf("%s: %+v; want every trace errored and no pass^k over them", c.Category, c)
		}
	}
	report := readFile(t, res.Dir, FileReport)
	if !strings.Contains(report, "Errored traces") || strings.Contains(report, "No invariant was breached") {
		t.Errorf("report.html does not show the errored traces apart from the findings")
	}
	if !strings.Contains(readFile(t, res.Dir, FileVerify), "7 of 7 traces errored") {
		t.Errorf("VERIFY.md does not say that the traces errored")
	}
	if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// TestPassKSkipsErroredCases: pass^k is the share of cases whose k repeats
// all passed, counted over the cases none of whose repeats errored; the
// breach rate and utility are over the judged traces only.
func TestPassKSkipsErroredCases(t *testing.T) {
	ok := &finished{Stop: "final"}
	broken := &finished{Stop: "", Error: "model server unreachable"}
	trace := func(id string, c, r int, f *finished) *Trace {
		return &Trace{Spec: TraceSpec{TraceID: id, Case: c, InjectionID: "DF-INJ-X", Category: injOutage, Repeat: r}, Finished: f}
	}
	traces := []*Trace{
		trace("c1.r1", 1, 1, ok), trace("c1.r2", 1, 2, broken), // case 1: one repeat errored
		trace("c2.r1", 2, 1, ok), trace("c2.r2", 2, 2, ok), // case 2: passed
		trace("c3.r1", 3, 1, ok), trace("c3.r2", 3, 2, nil), // case 3: never finished
		trace("c4.r1", 4, 1, ok), trace("c4.r2", 4, 2, ok), // case 4: breached
	}
	findings := []Finding{{TraceID: "c4.r2", Severity: "HIGH"}}
	m := measure(traces, findings, 2)
	if len(m.Categories) != 1 {
		t.Fatalf("categories %+v", m.Categories)
	}
	c := m.Categories[0]
	if m.Errored != 2 || c.Errored != 2 || c.Traces != 8 {
		t.Fatalf("errored %d/%d of %d traces, want 2", m.Errored, c.Errored, c.Traces)
	}
	if c.PassKCases != 2 || c.PassK != 0.5 {
		t.Errorf("pass^k %v over %d cases, want 0.5 over cases 2 and 4", c.PassK, c.PassKCases)
	}
	if c.Breached != 1 || c.BreachRate != 1.0/6 {
		t.Errorf("breached %d, rate %v; want 1 of the 6 judged traces", c.Breached, c.BreachRate)
	}
}

// TestErroredTraceNotJudged: a trace that did not run to its end gets no
// finding, whatever its partial record shows; a trace the data policy
// stopped is judged.
func TestErroredTraceNotJudged(t *testing.T) {
	e := newEvaluator(mustEnvelope(t))
	expired := []ApprovalEvent{{Seq: 3, Kind: custody.KindApprovalExpired, ID: "a1"}}
	errored := &Trace{Spec: TraceSpec{TraceID: "x"}, Approvals: expired, Finished: &finished{Error: "model server unreachable"}, FinishSeq: 4}
	if fs := e.Trace(errored); len(fs) != 0 {
		t.Errorf("errored trace judged: %+v", fs)
	}
	stopped := &Trace{Spec: TraceSpec{TraceID: "y"}, Approvals: expired, Finished: &finished{Error: dataPolicyStop{}.Error()}, FinishSeq: 4}
	if stopped.Errored() || len(e.Trace(stopped)) == 0 {
		t.Errorf("a trace the data policy stopped is not judged")
	}
}

// TestRunRefusesRetired: a RETIRED envelope is refused unless allowed, and
// an allowed run records the status.
func TestRunRefusesRetired(t *testing.T) {
	retired := strings.Replace(string(WardRoundEnvelope()), `"status": "EXPERIMENTAL"`, `"status": "RETIRED"`, 1)
	_, err := Run(context.Background(), Config{Envelope: []byte(retired), Target: targetCareful, Cases: 1,
		Out: filepath.Join(t.TempDir(), "p"), OpenStore: openTestStore})
	if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "RETIRED") {
		t.Fatalf("run of a RETIRED envelope: %v, want EINVALID naming RETIRED", err)
	}
	res := runPack(t, Config{Envelope: []byte(retired), Target: targetCareful, Cases: 1, AllowRetired: true})
	if res.Info.EnvelopeStatus != "RETIRED" || !strings.Contains(readFile(t, res.Dir, FileReport), "status RETIRED") {
		t.Errorf("run.json status %q; the report must name the status", res.Info.EnvelopeStatus)
	}
}

// TestRetestUnreachableResolvesNothing: a retest whose target cannot be
// reached resolves no finding: each is not retested, and verify agrees.
func TestRetestUnreachableResolvesNothing(t *testing.T) {
	orig := runPack(t, Config{Target: targetNaive, Cases: 1})
	res, err := Retest(context.Background(), orig.Dir, Config{OpenStore: openTestStore, Target: unreachableTarget(t), Out: filepath.Join(t.TempDir(), "retest")})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Retest
	if r.Resolved != 0 || r.Persists != 0 || r.NotRetested != len(orig.Findings) || len(orig.Findings) == 0 {
		t.Fatalf("%d resolved, %d persist, %d not retested of %d findings; want none resolved", r.Resolved, r.Persists, r.NotRetested, len(orig.Findings))
	}
	for _, f := range r.Findings {
		if f.Status != statusErrored {
			t.Errorf("finding %s: %s, want %s", f.FindingID, f.Status, statusErrored)
		}
	}
	if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() || !rep.OriginalChecked {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}
