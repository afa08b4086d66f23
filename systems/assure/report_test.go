package assure

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestBoundaries(t *testing.T) {
	env := Envelope{Boundaries: map[string]bool{
		"simulation_only": true, "not_dcb_signoff": true, "client_retains_deployment_authority": true,
		"not_clinical_care": false, "a_new_boundary": true,
	}}
	want := []string{
		"a_new_boundary",
		"The client retains deployment authority.",
		"Not a DCB0129/DCB0160 clinical safety sign-off.",
		"Simulation only: nothing here touched a real patient or a real system.",
	}
	if got := boundaries(env); !slices.Equal(got, want) {
		t.Fatalf("boundaries\n%q\nwant\n%q", got, want)
	}
	if got := boundaries(mustEnvelope(t)); len(got) != 5 {
		t.Fatalf("the example envelope states %d boundaries, want its 5", len(got))
	}
}

func TestBarChart(t *testing.T) {
	m := Metrics{Categories: []CategoryMetrics{{Category: Baseline, BreachRate: 0}, {Category: "<WRONG>", BreachRate: 0.25}}}
	svg := string(barChart(`Rate & "share"`, m, func(c CategoryMetrics) float64 { return c.BreachRate }, "#b3261e"))
	for _, want := range []string{
		`height="74"`, // 30 + 22 per row
		`aria-label="Rate &amp; &#34;share&#34;"`,
		`>&lt;WRONG&gt;</text>`,
		`width="80.0" height="16" fill="#b3261e"`, // a quarter of 320
		`width="0.0" height="16" fill="#b3261e"`,
		`>25%</text>`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("dueChart does not hold %s:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<WRONG>") || !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>") {
		t.Errorf("dueChart not one escaped svg element: %s", svg)
	}
}

func TestClipAndSeqs(t *testing.T) {
	if clip("short", 5) != "short" || clip("longer", 4) != "long…" {
		t.Error("clip")
	}
	if joinSeqs(nil) != "" || joinSeqs([]int64{3, 10, 12}) != "3, 10, 12" {
		t.Error("joinSeqs")
	}
}

func TestEvents(t *testing.T) {
	b := newTrace(t)
	rec := b.record(thisPatient)
	rx := b.refuse(prescribeTool, custody.EPENDING, `{"medicine": "m"}`)
	ap := b.approval(custody.KindApprovalDecided, "a1", "approved")
	b.ok(noteTool, `{"text": "`+strings.Repeat("x", 300)+`"}`, `{}`)
	tr := b.finish("done", WorldState{})
	tr.Finished.Error = "cut short"
	evs := events(tr, []Finding{{Evidence: []int64{rx, tr.FinishSeq}}})
	if len(evs) != 5 {
		t.Fatalf("events %+v, want the 3 outcomes, the approval and the end", evs)
	}
	for i, e := range evs {
		if i > 0 && evs[i-1].Seq >= e.Seq {
			t.Fatalf("events out of seq order: %+v", evs)
		}
	}
	if e := evs[0]; e.Seq != rec || e.What != "succeeded get_patient" || e.Flag {
		t.Errorf("record event %+v", e)
	}
	if e := evs[1]; e.What != "refused prescribe_medication" || !e.Flag || e.Detail != `{"medicine": "m"} → pending_approval: refused or failed` {
		t.Errorf("refusal event %+v, want it flagged with its error", e)
	}
	if e := evs[2]; e.Seq != ap || e.What != custody.KindApprovalDecided || e.Detail != "prescribe_medication approved" {
		t.Errorf("approval event %+v", e)
	}
	if e := evs[3]; len(e.Detail) != 240+len("…") {
		t.Errorf("long arguments not clipped: %d bytes", len(e.Detail))
	}
	if e := evs[4]; e.What != "final answer (final)" || e.Detail != "done cut short" || !e.Flag {
		t.Errorf("final event %+v", e)
	}
}

func TestTimelines(t *testing.T) {
	var traces []*Trace
	for i := range maxTimelines + 5 {
		traces = append(traces, endedTrace(fmt.Sprintf("c%03d.BASELINE.r1", i), "", i+1, 1, WorldState{}))
	}
	res := &Result{Traces: traces, Findings: []Finding{
		{TraceID: "c204.BASELINE.r1"}, {TraceID: "c100.BASELINE.r1"}, {TraceID: "c204.BASELINE.r1"},
	}}
	tls, omitted := timelines(res)
	if len(tls) != maxTimelines || omitted != 5 {
		t.Fatalf("%d timelines, %d omitted; want %d and 5", len(tls), omitted, maxTimelines)
	}
	if tls[0].Trace.Spec.TraceID != "c204.BASELINE.r1" || len(tls[0].Findings) != 2 || tls[1].Trace.Spec.TraceID != "c100.BASELINE.r1" || tls[2].Trace.Spec.TraceID != "c000.BASELINE.r1" {
		t.Fatalf("timelines start %s %s %s: want the traces with most findings first, then trace order",
			tls[0].Trace.Spec.TraceID, tls[1].Trace.Spec.TraceID, tls[2].Trace.Spec.TraceID)
	}
	if res.Traces[0].Spec.TraceID != "c000.BASELINE.r1" {
		t.Fatal("timelines reordered the result's traces")
	}
	if tls, omitted := timelines(&Result{}); len(tls) != 0 || omitted != 0 {
		t.Fatal("timelines of no traces")
	}
}

func TestVerifyGuide(t *testing.T) {
	info := RunInfo{EnvelopeID: "DF-CAE-X", EnvelopeVersion: "0.1.0", Target: targetNaive, Backend: targetNaive, Seed: "7", Traces: 14, Completed: 14,
		LedgerHead: "abc123", LedgerEntries: 99, KeyFingerprint: "SHA256:feed"}
	plain := string(verifyGuide(info))
	for _, want := range []string{"Envelope DF-CAE-X 0.1.0, target `scripted:naive` (scripted:naive), seed 7, 14 traces.", "`SHA256:feed`", "Ledger head: `abc123` (99 entries).",
		"custody assure verify --key FINGERPRINT PACK", "custody ledger verify --jsonl ledger.jsonl --pubkey ledger.pub", "## Boundaries"} {
		if !strings.Contains(plain, want) {
			t.Errorf("VERIFY.md does not say %q", want)
		}
	}
	if strings.Contains(plain, "errored") || strings.Contains(plain, "## Retest") {
		t.Errorf("VERIFY.md of a clean run speaks of errors or a retest:\n%s", plain)
	}
	info.Metrics.Errored = 3
	info.RetestOf = &RetestRef{LedgerHead: "orighead", ManifestSHA256: "origsum"}
	both := string(verifyGuide(info))
	for _, want := range []string{"**3 of 14 traces errored**", "## Retest", "`orighead` (manifest SHA-256 `origsum`)", "The original is never modified"} {
		if !strings.Contains(both, want) {
			t.Errorf("VERIFY.md does not say %q", want)
		}
	}
}

// reportOf renders the report of hand-built results.
func reportOf(t *testing.T, res *Result) string {
	t.Helper()
	raw, err := report(mustEnvelope(t), res)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestReport(t *testing.T) {
	clean := endedTrace("c01.BASELINE.r1", "", 1, 1, WorldState{})
	broken := &Trace{Spec: TraceSpec{TraceID: "c01.X.r1"}, Finished: &finished{Error: "model server unreachable"}}
	t.Run("Clean", func(t *testing.T) {
		html := reportOf(t, &Result{Info: RunInfo{Target: targetCareful}, Traces: []*Trace{clean}})
		for _, want := range []string{"No invariant was breached.", "Boundaries of this assessment", "Not a DCB0129/DCB0160 clinical safety sign-off.",
			"DF-CAE-WARD-ROUND-001", "c01.BASELINE.r1", "<svg "} {
			if !strings.Contains(html, want) {
				t.Errorf("report does not show %q", want)
			}
		}
		if strings.Contains(html, "Errored traces") || strings.Contains(html, "<h2>Retest</h2>") {
			t.Error("a clean report shows errors or a retest")
		}
	})
	t.Run("OfflineAndEscaped", func(t *testing.T) {
		res := &Result{Info: RunInfo{Target: `<img src="http://x">`}, Traces: []*Trace{clean},
			Findings: []Finding{{FindingID: "F-1", InvariantID: invHumanDecides, Severity: "CRITICAL", TraceID: "c01.BASELINE.r1", Evidence: []int64{4, 7}, Summary: "<script>alert(1)</script>"}}}
		html := reportOf(t, res)
		if strings.Contains(html, "<script") || strings.Contains(html, `<img`) {
			t.Fatal("report carries markup from the run")
		}
		if regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?https?:`).MatchString(html) {
			t.Fatal("report loads an external resource")
		}
		if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(html, "4, 7") || strings.Contains(html, "No invariant was breached") {
			t.Fatal("report does not show the finding, escaped, with its evidence")
		}
	})
	t.Run("Errored", func(t *testing.T) {
		res := &Result{Traces: []*Trace{broken}}
		res.Info.Metrics.Errored, res.Info.Completed = 1, 1
		html := reportOf(t, res)
		for _, want := range []string{"Errored traces", "model server unreachable", "1 of 1 traces did not run to their end", "No finding in the judged traces"} {
			if !strings.Contains(html, want) {
				t.Errorf("report does not show %q", want)
			}
		}
	})
	t.Run("Retest", func(t *testing.T) {
		res := &Result{Traces: []*Trace{clean}, Retest: &RetestReport{Original: RetestRef{LedgerHead: "orighead"}, Resolved: 2, Persists: 1, New: 3, NotRetested: 4,
			Findings: []RetestStatus{{Status: statusResolved, FindingID: "F-9"}}}}
		res.Info.RetestOf = &RetestRef{Pack: "orig-pack", LedgerHead: "orighead"}
		html := reportOf(t, res)
		for _, want := range []string{"<h2>Retest</h2>", "2 resolved, 1 persist, 3 new, 4 not retested", "orig-pack", "F-9"} {
			if !strings.Contains(html, want) {
				t.Errorf("report does not show %q", want)
			}
		}
	})
	t.Run("Stopped", func(t *testing.T) {
		res := &Result{Traces: []*Trace{clean}}
		res.Info.Stopped = "identifiable patient data met"
		if html := reportOf(t, res); !strings.Contains(html, "<th>Stopped</th><td class=\"flag\">identifiable patient data met</td>") {
			t.Error("report does not say the run was stopped")
		}
	})
}
