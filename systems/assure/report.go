package assure

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"sort"
	"strings"
)

//go:embed report.html.tmpl
var reportTemplate string

// maxTimelines bounds the per-trace timelines in a report: every trace
// with a finding, then clean ones up to the bound.
const maxTimelines = 200

// reportData is what the report template shows.
type reportData struct {
	Env        Envelope
	Res        *Result
	Boundaries []string
	Policy     []string
	Charts     []template.HTML
	Timelines  []timeline
	Omitted    int
	// Errored lists the traces that did not run to their end.
	Errored []*Trace
	// Invariants shows each invariant with what its judge checks.
	Invariants []invariantView
}

// invariantView is one invariant in the report: how it was assessed, or
// why it was not.
type invariantView struct {
	Invariant
	// Form says what the judge checks; "" when the invariant was not
	// assessed, and Reason says why.
	Form, Reason string
}

// invariantViews returns the report's view of every invariant.
func invariantViews(env Envelope) []invariantView {
	out := make([]invariantView, 0, len(env.Invariants))
	for _, inv := range env.Invariants {
		r, why := ruleOf(env, inv)
		out = append(out, invariantView{Invariant: inv, Form: r.form, Reason: why})
	}
	return out
}

// timeline is one trace's events for the report.
type timeline struct {
	Trace    *Trace
	Findings []Finding
	Events   []event
}

type event struct {
	Seq    int64
	At     string
	What   string
	Detail string
	Flag   bool
}

// report renders report.html: readable offline (no scripts, no external
// resources), with the envelope's boundaries, the metrics, inline SVG
// charts, the findings and per-trace timelines.
func report(env Envelope, res *Result) ([]byte, error) {
	t, err := template.New("report").Funcs(template.FuncMap{
		"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"seqs": joinSeqs,
	}).Parse(reportTemplate)
	if err != nil {
		return nil, fmt.Errorf("report template: %w", err)
	}
	d := reportData{Env: env, Res: res, Boundaries: boundaries(env), Policy: []string{
		"synthetic data only (NHS numbers in the 999 test range)",
		"no identifiable patient data: every message is scanned and a hit stops the run",
		"no cross-session access: each trace is bound to its own patient by the gateway",
		"no external side effects: the tools change an in-memory synthetic world only",
	}}
	d.Charts = []template.HTML{
		barChart("Breach rate by category", res.Info.Metrics, func(c CategoryMetrics) float64 { return c.BreachRate }, "#b3261e"),
		barChart("Utility by category", res.Info.Metrics, func(c CategoryMetrics) float64 { return c.Utility }, "#1e6fb3"),
	}
	d.Timelines, d.Omitted = timelines(res)
	d.Errored = res.Errored()
	d.Invariants = invariantViews(env)
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	return buf.Bytes(), nil
}

func joinSeqs(seqs []int64) string {
	s := make([]string, len(seqs))
	for i, q := range seqs {
		s[i] = fmt.Sprint(q)
	}
	return strings.Join(s, ", ")
}

// boundaries states the envelope's boundaries in words.
func boundaries(env Envelope) []string {
	words := map[string]string{
		"simulation_only":                     "Simulation only: nothing here touched a real patient or a real system.",
		"not_clinical_care":                   "Not clinical care: no result here is clinical advice.",
		"not_regulatory_certification":        "Not a regulatory certification.",
		"not_dcb_signoff":                     "Not a DCB0129/DCB0160 clinical safety sign-off.",
		"client_retains_deployment_authority": "The client retains deployment authority.",
	}
	var keys []string
	for k, v := range env.Boundaries {
		if v {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if w, ok := words[k]; ok {
			out = append(out, w)
		} else {
			out = append(out, k)
		}
	}
	return out
}

// barChart draws one horizontal bar per category as inline SVG.
func barChart(title string, m Metrics, value func(CategoryMetrics) float64, color string) template.HTML {
	const rowH, labelW, barW = 22, 230, 320
	h := 30 + rowH*len(m.Categories)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, labelW+barW+60, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="0" y="16" font-weight="bold">%s</text>`, template.HTMLEscapeString(title))
	for i, c := range m.Categories {
		y := 26 + i*rowH
		v := value(c)
		fmt.Fprintf(&b, `<text x="0" y="%d" font-size="12">%s</text>`, y+14, template.HTMLEscapeString(c.Category))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="16" fill="#eee"/>`, labelW, y+2, barW)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="16" fill="%s"/>`, labelW, y+2, v*barW, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%.0f%%</text>`, labelW+barW+6, y+14, 100*v)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from escaped text and numbers only
}

// timelines builds the per-trace timelines: traces with findings first.
func timelines(res *Result) ([]timeline, int) {
	byTrace := map[string][]Finding{}
	for _, f := range res.Findings {
		byTrace[f.TraceID] = append(byTrace[f.TraceID], f)
	}
	traces := append([]*Trace(nil), res.Traces...)
	sort.SliceStable(traces, func(i, j int) bool {
		return len(byTrace[traces[i].Spec.TraceID]) > len(byTrace[traces[j].Spec.TraceID])
	})
	n := min(len(traces), maxTimelines)
	out := make([]timeline, 0, n)
	for _, t := range traces[:n] {
		out = append(out, timeline{Trace: t, Findings: byTrace[t.Spec.TraceID], Events: events(t, byTrace[t.Spec.TraceID])})
	}
	return out, len(traces) - n
}

// events lists a trace's calls, approvals and final answer in seq order,
// flagging the evidence of its findings.
func events(t *Trace, fs []Finding) []event {
	flag := map[int64]bool{}
	for _, f := range fs {
		for _, s := range f.Evidence {
			flag[s] = true
		}
	}
	var out []event
	for _, c := range t.Calls {
		if !c.Outcome() {
			continue
		}
		detail := string(c.Args)
		if c.ErrKind != "" {
			detail += " → " + c.ErrKind + ": " + c.ErrMessage
		}
		out = append(out, event{c.Seq, c.At, strings.TrimPrefix(c.Kind, "call.") + " " + c.Tool, clip(detail, 240), flag[c.Seq]})
	}
	for _, a := range t.Approvals {
		out = append(out, event{a.Seq, a.At, a.Kind, a.Tool + " " + a.Decision, flag[a.Seq]})
	}
	for _, s := range t.Transitions {
		out = append(out, event{s.Seq, "", "state " + s.Change, s.Tool + " " + s.Detail, flag[s.Seq]})
	}
	if t.Finished != nil {
		out = append(out, event{t.FinishSeq, "", "final answer (" + t.Finished.Stop + ")", clip(t.Finished.Final+" "+t.Finished.Error, 400), flag[t.FinishSeq]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// verifyGuide is VERIFY.md: how a third party checks the pack.
func verifyGuide(info RunInfo) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Verifying this evidence pack\n\n")
	fmt.Fprintf(&b, "Envelope %s %s, target `%s` (%s), seed %s, %d traces.\n\n", info.EnvelopeID, info.EnvelopeVersion, info.Target, info.Backend, info.Seed, info.Traces)
	fmt.Fprintf(&b, "Signed by the assessor's key `%s`: one key, kept in the data directory of whoever ran the assessment, signs all their packs (`custody assure key` prints its fingerprint there). Compare it with the fingerprint the assessor gave you by a channel other than this pack; a pack signed by any other key is not theirs.\n\n", info.KeyFingerprint)
	if info.Metrics.Errored > 0 {
		fmt.Fprintf(&b, "**%d of %d traces errored**: they did not run to their end, are not judged, and are in no metric. This pack does not assess them.\n\n", info.Metrics.Errored, info.Completed)
	}
	verifyGaps(&b, info.Unassessed)
	fmt.Fprintf(&b, "Ledger head: `%s` (%d entries).\n\n", info.LedgerHead, info.LedgerEntries)
	b.WriteString("## One command\n\n    custody assure verify --key FINGERPRINT PACK\n\n")
	fmt.Fprintf(&b, "FINGERPRINT is the assessor's key fingerprint as the assessor gave it to you, not as this pack states it (`%s`): with `--key` (or `--pubkey FILE`), a pack signed or re-signed by any other key fails.\n\n", info.KeyFingerprint)
	b.WriteString("It checks every file against `manifest.json` (SHA-256), the manifest signature `manifest.sig` with `ledger.pub`, the ledger's hash chain and signed checkpoints, and re-evaluates every safety invariant from the recorded trace to confirm `findings.json` and the metrics in `run.json`. Any problem is named by file (and ledger seq); the exit code is 1.\n\n")
	b.WriteString("## By hand\n\n")
	b.WriteString("1. `sha256sum` every file and compare with `manifest.json`.\n")
	b.WriteString("2. Verify `manifest.sig` (base64 ed25519 over the exact bytes of `manifest.json`) with the key in `ledger.pub` (PEM, PKIX).\n")
	b.WriteString("3. `custody ledger verify --jsonl ledger.jsonl --pubkey ledger.pub` checks the chain: `hash = SHA-256(prev ‖ JCS(entry without hash))`, and every checkpoint signature over `custody-checkpoint/v1\\n<size>\\n<head>\\n<at>\\n`.\n")
	b.WriteString("4. Each trace is the entries with its `trace` id: `assure.trace.started`, the exact messages (`assure.message`), every gateway call (`call.*`) with its exact arguments and result, approvals (`approval.*`), every change of the synthetic world's state (`assure.state.transition`, one entry each, right after the call that made it, with the state after it), and `assure.trace.finished` with the final state. Findings cite ledger seqs as evidence.\n\n")
	if info.RetestOf != nil {
		fmt.Fprintf(&b, "## Retest\n\nThis pack retests the pack whose ledger head is `%s` (manifest SHA-256 `%s`). The original is never modified: `custody assure verify` on it still passes. `retest.json` marks each original finding resolved or persists, and lists new ones.\n\n", info.RetestOf.LedgerHead, info.RetestOf.ManifestSHA256)
	}
	b.WriteString("## Boundaries\n\nSimulation only, on synthetic data. Not clinical care, not a regulatory certification, not a DCB sign-off; the client retains deployment authority.\n")
	return []byte(b.String())
}

// verifyGaps writes the coverage gaps of a pack, when there are any.
func verifyGaps(b *strings.Builder, gaps []Unassessed) {
	if len(gaps) == 0 {
		return
	}
	fmt.Fprintf(b, "## Coverage gaps: %d invariants NOT ASSESSED\n\n", len(gaps))
	b.WriteString("No judge understands their text, so nothing in this pack says whether they held:\n\n")
	for _, u := range gaps {
		fmt.Fprintf(b, "- %s (%s) %q: %s.", u.InvariantID, u.Category, u.Rule, u.Reason)
		if len(u.Unjudged) > 0 {
			fmt.Fprintf(b, " Nothing judged the %s injections.", strings.Join(u.Unjudged, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
