package peas_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// detectIn runs the detector on readings in a new trace and returns the
// trace and the signature as JSON.
func (s *stack) detectIn(t *testing.T, readings string) (trace string, sig json.RawMessage) {
	t.Helper()
	res, err := s.call("", peas.ToolDetect, `{"location_id":"`+location+`","sensor_readings":`+readings+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var det peas.DetectOutput
	if err := json.Unmarshal(res.Output, &det); err != nil {
		t.Fatal(err)
	}
	sig, _ = json.Marshal(det.Signature)
	return res.Trace, sig
}

// comparison returns a contract-valid comparison with a label of
// labelLen and a summary of summaryLen characters.
func comparison(i, labelLen, summaryLen int) peas.Comparison {
	label := fmt.Sprintf("Crash %d ", i)
	label += strings.Repeat("x", labelLen-len(label))
	summary := fmt.Sprintf("Incident %d: ", i) + strings.Repeat("snow and wind ", 40)
	return peas.Comparison{Label: label, Summary: summary[:summaryLen], SourceURL: "https://example.org/incident"}
}

// composeWith composes a brief over a fresh whiteout signature with cmps
// as historical_comparisons (omitted when nil).
func (s *stack) composeWith(t *testing.T, cmps []peas.Comparison) (peas.BriefOutput, error) {
	t.Helper()
	trace, sig := s.detectIn(t, whiteout)
	args := map[string]any{"signature": sig}
	if cmps != nil {
		args["historical_comparisons"] = cmps
	}
	raw, _ := json.Marshal(args)
	res, err := s.call(trace, peas.ToolBrief, string(raw))
	if err != nil {
		return peas.BriefOutput{}, err
	}
	var b peas.BriefOutput
	if err := json.Unmarshal(res.Output, &b); err != nil {
		t.Fatal(err)
	}
	return b, nil
}

// TestBriefMaxSizeComparisonsFit: four comparisons of the schema's maximum
// size are a valid input, so the brief is a valid output: within 1,400
// characters, the shortening said in the reasoning, still citing one of
// the given comparisons.
func TestBriefMaxSizeComparisonsFit(t *testing.T) {
	s := newStack(t, llm.Router{})
	cmps := []peas.Comparison{comparison(1, 96, 400), comparison(2, 96, 400), comparison(3, 96, 400), comparison(4, 96, 400)}
	b, err := s.composeWith(t, cmps)
	if err != nil {
		t.Fatalf("compose_ops_brief with four maximum-size comparisons: %v", err)
	}
	if n := utf8.RuneCountInString(b.Text); n > 1400 {
		t.Fatalf("brief is %d characters, over 1,400", n)
	}
	if !strings.Contains(b.Text, "Galesburg") || !strings.Contains(b.Text, cmps[0].Label) {
		t.Errorf("brief %q: want Galesburg and the first given comparison cited", b.Text)
	}
	if !b.CitationIncluded {
		t.Error("historical_citation_included false, but the brief cites a given comparison")
	}
	if !strings.Contains(b.Reasoning, "label only") || !strings.Contains(b.Reasoning, "1400 characters") {
		t.Errorf("reasoning %q does not say the comparisons were shortened", b.Reasoning)
	}
}

// TestBriefCitationFlag: historical_citation_included is true iff the
// brief cites a comparison from the input, never for the built-in one.
func TestBriefCitationFlag(t *testing.T) {
	galesburg := peas.Comparison{Label: "I-94 Galesburg 2015-01-09 whiteout pile-up", Summary: "A whiteout near Galesburg ended in a pile-up."}
	tests := []struct {
		name string
		cmps []peas.Comparison
		want bool
	}{
		{"NoneGiven", nil, false},
		{"EmptyGiven", []peas.Comparison{}, false},
		{"OneGiven", []peas.Comparison{comparison(1, 40, 100)}, true},
		{"GalesburgGiven", []peas.Comparison{galesburg}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, llm.Router{})
			b, err := s.composeWith(t, tt.cmps)
			if err != nil {
				t.Fatal(err)
			}
			if b.CitationIncluded != tt.want {
				t.Fatalf("historical_citation_included = %v, want %v (brief %q)", b.CitationIncluded, tt.want, b.Text)
			}
			if !strings.Contains(b.Text, "Galesburg") {
				t.Fatalf("critical brief %q does not cite Galesburg", b.Text)
			}
		})
	}
}

// TestBriefValidInputsGiveValidOutputs: random contract-valid comparison
// lists (0 to 4 items, every length the schema allows) always give a
// brief the output contract accepts.
func TestBriefValidInputsGiveValidOutputs(t *testing.T) {
	s := newStack(t, llm.Router{})
	r := rand.New(rand.NewPCG(23, 2026))
	for i := range 25 {
		cmps := make([]peas.Comparison, r.IntN(5))
		for j := range cmps {
			cmps[j] = comparison(j, 10+r.IntN(87), 20+r.IntN(381))
		}
		b, err := s.composeWith(t, cmps)
		if err != nil {
			t.Fatalf("case %d (%d comparisons): %v", i, len(cmps), err)
		}
		if len(cmps) > 0 && !b.CitationIncluded {
			t.Errorf("case %d: %d comparisons given, none cited: %q", i, len(cmps), b.Text)
		}
	}
}
