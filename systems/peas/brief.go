package peas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/systems/guard"
	"github.com/custody-dev/custody/systems/llm"
)

// Comparison is a historical incident a brief cites, as the contract's
// historical_comparisons items spell it.
type Comparison struct {
	Label     string `json:"label"`
	Summary   string `json:"summary"`
	SourceURL string `json:"source_url,omitempty"`
}

// galesburg returns the comparison every brief of severity warn or above
// cites: the 2015 whiteout pile-up on I-94 near galesburg, Michigan.
func galesburg() Comparison {
	return Comparison{
		Label:   "I-94 Galesburg 2015-01-09 whiteout pile-up (~193 vehicles, 1 fatality)",
		Summary: "On 2015-01-09 a whiteout in heavy snow on I-94 near Galesburg, Michigan, ended in a chain-reaction pile-up of about 193 vehicles with 1 fatality.",
	}
}

// galesburgKey is the phrase a brief must hold to cite Galesburg.
const galesburgKey = "Galesburg"

// briefInput is compose_ops_brief's input.
type briefInput struct {
	Signature   json.RawMessage `json:"signature"`
	Comparisons []Comparison    `json:"historical_comparisons,omitempty"`
}

// BriefOutput is compose_ops_brief's output. The prediction ids are null
// unless tracing is on.
type BriefOutput struct {
	BriefID           string  `json:"brief_id"`
	Text              string  `json:"ops_brief_text"`
	RecommendedAction string  `json:"recommended_action"`
	Urgency           string  `json:"urgency"`
	CitationIncluded  bool    `json:"historical_citation_included"`
	Reasoning         string  `json:"reasoning"`
	TraceID           *string `json:"prediction_trace_id"`
	SpanID            *string `json:"prediction_span_id"`
}

// Brief is what the system keeps of a brief: the output and the action it
// recommends, which request_approval puts to the operator.
type Brief struct {
	BriefOutput
	Signature  Signature `json:"signature"`
	Trace      string    `json:"trace"`
	Billboard  string    `json:"billboard_id"`
	Message    string    `json:"message"`
	DurationS  int       `json:"duration_s"`
	Backend    string    `json:"backend"`
	Breach     string    `json:"breach,omitempty"`
	Comparison []string  `json:"comparisons,omitempty"`
}

// urgency maps a severity to the brief's urgency.
func urgency(severity string) string {
	switch severity {
	case Critical:
		return "critical"
	case Warn:
		return "high"
	}
	return "low"
}

// signMessage returns the sign message and duration the chain recommends
// for a signature: deterministic, within the sign's rules.
func signMessage(sig Signature) (string, int) {
	has := func(word string) bool {
		for _, f := range sig.ContributingFactors {
			if strings.Contains(f, word) {
				return true
			}
		}
		return false
	}
	switch {
	case sig.Severity == Critical && has("snow"):
		return "WHITEOUT AND CRASHES AHEAD. SLOW DOWN NOW", 1800
	case sig.Severity == Critical:
		return "CRASHES AHEAD. SLOW DOWN NOW", 1800
	case has("snow") || has("freez"):
		return "SNOW AND ICE AHEAD. SLOW DOWN", 900
	case has("visibility"):
		return "LOW VISIBILITY AHEAD. SLOW DOWN", 900
	}
	return "DRIVE WITH CARE", 900
}

// composeBrief is the compose_ops_brief handler.
func (s *System) composeBrief(ctx context.Context, call custody.Call) (json.RawMessage, error) {
	var in briefInput
	if err := decodeArgs(call, &in); err != nil {
		return nil, err
	}
	sig, err := s.checkSignature(ctx, in.Signature)
	if err != nil {
		return nil, err
	}
	b, err := s.brief(ctx, call.Trace, sig, in.Signature, in.Comparisons)
	if err != nil {
		return nil, err
	}
	if err := s.putDoc(ctx, NSBriefs, b.BriefID, b); err != nil {
		return nil, err
	}
	return output(b.BriefOutput)
}

// checkSignature accepts only a signature the detector produced, exactly:
// a brief over an altered signature would word a severity nobody measured.
func (s *System) checkSignature(ctx context.Context, raw json.RawMessage) (Signature, error) {
	var sig Signature
	if err := json.Unmarshal(raw, &sig); err != nil {
		return Signature{}, &custody.Error{Kind: custody.EINVALID, Message: "signature does not decode", Err: err}
	}
	var rec signatureRecord
	if err := s.getDoc(ctx, NSSignatures, sig.SignatureID, "signature", &rec); err != nil {
		return Signature{}, err
	}
	stored, err := json.Marshal(rec.Signature)
	if err != nil {
		return Signature{}, fmt.Errorf("encode signature: %w", err)
	}
	if !sameJSON(stored, raw) {
		return Signature{}, &custody.Error{Kind: custody.EDENIED,
			Message:    fmt.Sprintf("signature %s differs from what the detector produced", sig.SignatureID),
			Violations: []custody.Violation{{Instance: "/signature", Keyword: "custody", Message: "altered signature"}}}
	}
	return rec.Signature, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	ca, err1 := ledger.Canonicalize(a)
	cb, err2 := ledger.Canonicalize(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// briefMaxChars is the contract's bound on ops_brief_text.
const briefMaxChars = 1400

// brief composes the brief: the template, then the language hop, guarded.
func (s *System) brief(ctx context.Context, trace string, sig Signature, sigRaw json.RawMessage, given []Comparison) (Brief, error) {
	c, _ := s.corridor(sig.LocationID)
	billboard := c.Billboard
	if billboard == "" {
		billboard = "VMS:" + sig.LocationID
	}
	msg, dur := signMessage(sig)
	action := fmt.Sprintf("Post %q on sign %s for %d minutes.", msg, billboard, dur/60)
	fit := fitBrief(sig, s.comparisons(sig.Severity, given), action)
	traceID, spanID := hopIDs(ctx)
	composed := s.composeText(ctx, sig, sigRaw, fit.cited, fit.text)
	b := Brief{
		BriefOutput: BriefOutput{
			BriefID: s.d.NewID(), Text: composed.Text, RecommendedAction: action,
			Urgency: urgency(sig.Severity), CitationIncluded: citesGiven(composed.Text, fit.cited, given),
			TraceID: traceID, SpanID: spanID,
		},
		Signature: sig, Trace: trace, Billboard: billboard, Message: msg, DurationS: dur, Backend: composed.Backend,
	}
	for _, c := range fit.cited {
		b.Comparison = append(b.Comparison, c.Label)
	}
	b.Reasoning = briefReasoning(sig, composed, fit)
	if composed.Breach != nil {
		b.Breach = composed.Breach.Error()
		s.recordBreach(ctx, trace, b.BriefID, composed)
	}
	return b, nil
}

// comparisons returns what a brief of this severity may cite, in order of
// preference: none below warn, else Galesburg (the caller's own entry for
// it when given, the built-in one otherwise), then the caller's and the
// system's other comparisons, at most four.
func (s *System) comparisons(severity string, given []Comparison) []Comparison {
	if severity == Watch {
		return nil
	}
	g := galesburg()
	for _, c := range given {
		if isGalesburg(c) {
			g = c
			break
		}
	}
	out := []Comparison{g}
	for _, c := range append(append([]Comparison(nil), given...), s.d.Comparisons...) {
		if !isGalesburg(c) && len(out) < 4 {
			out = append(out, c)
		}
	}
	return out
}

func isGalesburg(c Comparison) bool { return strings.Contains(c.Label, galesburgKey) }

// citesGiven reports whether text cites a comparison of given: one the
// caller passed in historical_comparisons, not a built-in one. A
// comparison is cited when text names its label, or says Galesburg for
// the caller's Galesburg entry.
func citesGiven(text string, cited, given []Comparison) bool {
	for _, c := range cited {
		if !slices.Contains(given, c) {
			continue
		}
		if strings.Contains(text, c.Label) || isGalesburg(c) && strings.Contains(text, galesburgKey) {
			return true
		}
	}
	return false
}

// fitted is a template brief within the contract's length: which
// comparisons it cites and how many it shortened or left out to fit.
type fitted struct {
	text      string
	cited     []Comparison
	labelOnly int // cited by label alone, their summaries left out
	dropped   int // not cited at all
}

// fitBrief builds the template brief within briefMaxChars characters:
// four comparisons of the contract's maximum size do not fit in full. It
// first cites the last comparisons by label alone, then leaves them out
// from the last, keeping the first (Galesburg, which severity warn and
// above must cite).
func fitBrief(sig Signature, cmps []Comparison, action string) fitted {
	n, full := len(cmps), len(cmps)
	for {
		text := templateBrief(sig, cmps[:n], full, action)
		if utf8.RuneCountInString(text) <= briefMaxChars || n == 0 || (n == 1 && full == 0) {
			return fitted{text: text, cited: cmps[:n], labelOnly: n - full, dropped: len(cmps) - n}
		}
		if full > 0 {
			full--
		} else {
			n--
		}
	}
}

// templateBrief is the deterministic brief. It cites the first full
// comparisons with their summaries and the rest by label alone.
func templateBrief(sig Signature, cmps []Comparison, full int, action string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s pile-up signature at %s (confidence %.2f). ", strings.ToUpper(sig.Severity), sig.LocationID, sig.Confidence)
	fmt.Fprintf(&b, "Factors: %s. ", strings.Join(sig.ContributingFactors, "; "))
	for i, c := range cmps {
		if i < full {
			fmt.Fprintf(&b, "Compare %s: %s ", c.Label, c.Summary)
		} else {
			fmt.Fprintf(&b, "Compare %s. ", c.Label)
		}
	}
	fmt.Fprintf(&b, "Recommended: %s", action)
	return b.String()
}

// composeText runs the language hop on the router's language backend.
func (s *System) composeText(ctx context.Context, sig Signature, sigRaw json.RawMessage, cmps []Comparison, tmpl string) llm.Composed {
	cmpRaw, _ := json.Marshal(cmps)
	var cites []string
	if len(cmps) > 0 {
		cites = []string{galesburgKey}
	}
	// The signature's id is an identifier, not a fact: the digits of a
	// random UUID must never license a number in a brief.
	facts := sig
	facts.SignatureID = ""
	factRaw, err := json.Marshal(facts)
	if err != nil {
		factRaw = sigRaw
	}
	check := guard.All(
		briefGuard{Signature: string(factRaw), Comparisons: string(cmpRaw), Template: tmpl, Citations: cites}.check(),
		guard.MaxChars(briefMaxChars),
	)
	p := llm.Prompt{
		System: "You write ops briefs for highway operators. Use only the facts given: no number, place, field or measurement that is not in the signature, the comparisons or the draft. At most 200 words, plain text.",
		User: fmt.Sprintf("Signature: %s\nHistorical comparisons: %s\nDraft brief: %s\nRewrite the draft as a clear brief for the operator.%s",
			sigRaw, cmpRaw, tmpl, citeHint(cites)),
		MaxTokens: 400,
	}
	return llm.Compose(ctx, s.d.LLM.For(llm.HopLanguage), p, tmpl, check)
}

func citeHint(cites []string) string {
	if len(cites) == 0 {
		return ""
	}
	return " Cite the " + cites[0] + " comparison."
}

func briefReasoning(sig Signature, c llm.Composed, f fitted) string {
	r := fmt.Sprintf("Brief for signature %s: severity=%s maps to urgency %s; confidence=%.3f and contributing_factors are restated from the signature; %d historical comparison(s) cited",
		sig.SignatureID, sig.Severity, urgency(sig.Severity), sig.Confidence, len(f.cited))
	if f.labelOnly > 0 || f.dropped > 0 {
		r += fmt.Sprintf(" (%d by label only and %d left out to keep ops_brief_text within %d characters)", f.labelOnly, f.dropped, briefMaxChars)
	}
	r += "; text by " + c.Backend
	if c.Breach != nil {
		r += " after the model's text failed the brief guard"
	}
	return r + "."
}

// recordBreach puts a guard breach on the ledger: the model's text was not
// used and why.
func (s *System) recordBreach(ctx context.Context, trace, briefID string, c llm.Composed) {
	s.d.Logger.Warn("brief guard breach: template used", "brief_id", briefID, "breach", c.Breach)
	if s.d.Ledger == nil {
		return
	}
	body, _ := json.Marshal(map[string]string{"hop": ToolBrief, "brief_id": briefID, "used": c.Backend, "breach": c.Breach.Error()})
	_, err := s.d.Ledger.Append(ctx, custody.Entry{Kind: custody.KindContractBreach, Trace: trace, Actor: "peas",
		Refs: map[string]string{"brief_id": briefID}, Body: body})
	if err != nil {
		s.d.Logger.Error("record brief guard breach", "brief_id", briefID, "err", err)
	}
}
