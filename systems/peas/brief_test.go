package peas_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// writer is an edge text backend that writes a fixed brief.
type writer struct{ text string }

func (w writer) Name() string { return "edge:writer" }
func (w writer) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: w.text}}, nil
}

// fakeTracer hands out fixed span ids.
type fakeTracer struct{}

func (fakeTracer) Start(ctx context.Context, _, _ string) (context.Context, string, string, func()) {
	return ctx, strings.Repeat("ab", 16), strings.Repeat("cd", 8), func() {}
}

func (fakeTracer) End(string) {}

func TestBriefComposer(t *testing.T) {
	good := "Critical pile-up signature at I-94:MM88-EB: visibility 150 ft in snow with wind, crashes rising. " +
		"Like Galesburg in 2015 (about 193 vehicles). Post the sign now."
	tests := []struct {
		name        string
		edge        llm.Backend
		wantBackend string
		breach      bool
	}{
		{"Template", nil, "template", false},
		{"ModelRestatesFacts", writer{good}, "edge:writer", false},
		{"ModelInventsNumber", writer{strings.Replace(good, "150 ft", "90 ft", 1)}, "template", true},
		{"ModelInventsPlace", writer{strings.Replace(good, "Post the sign", "Close the road near Kalamazoo and post the sign", 1)}, "template", true},
		{"ModelInventsPlaceOpeningSentence", writer{good + " Kalamazoo saw worse."}, "template", true},
		{"ModelInventsMeasurement", writer{good + " Humidity is high."}, "template", true},
		{"ModelDropsCitation", writer{strings.Replace(good, "Like Galesburg in 2015 (about 193 vehicles). ", "", 1)}, "template", true},
		{"ModelTooLong", writer{good + strings.Repeat(" snow", 200)}, "template", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, llm.Router{Edge: tt.edge})
			ch := s.pending(t)
			var b peas.Brief
			raw, err := s.db.State(context.Background(), peas.NSBriefs, ch.BriefID)
			if err != nil || json.Unmarshal(raw, &b) != nil {
				t.Fatalf("brief %s: %v", ch.BriefID, err)
			}
			if b.Backend != tt.wantBackend || (b.Breach != "") != tt.breach {
				t.Fatalf("brief by %q breach %q, want %q breach %v", b.Backend, b.Breach, tt.wantBackend, tt.breach)
			}
			if b.CitationIncluded || !strings.Contains(b.Text, "Galesburg") || b.Urgency != "critical" {
				t.Errorf("brief %+v: want the built-in Galesburg citation, historical_citation_included false (no comparison was given) and critical urgency", b.BriefOutput)
			}
			if !strings.Contains(b.RecommendedAction, sign) || !strings.Contains(b.RecommendedAction, b.Message) {
				t.Errorf("recommended action %q does not name the sign and message", b.RecommendedAction)
			}
			es, err := s.db.Entries(context.Background(), custody.Query{Kind: custody.KindContractBreach, Refs: map[string]string{"brief_id": ch.BriefID}})
			if err != nil || (len(es) == 1) != tt.breach {
				t.Fatalf("breach entries %d (%v), want breach %v", len(es), err, tt.breach)
			}
		})
	}
}

func TestBriefPredictionIDs(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	var b peas.Brief
	raw, _ := s.db.State(context.Background(), peas.NSBriefs, ch.BriefID)
	json.Unmarshal(raw, &b)
	if b.TraceID != nil || b.SpanID != nil {
		t.Fatalf("prediction ids %v %v without tracing, want null", b.TraceID, b.SpanID)
	}
	out, err := json.Marshal(b.BriefOutput)
	if err != nil || !strings.Contains(string(out), `"prediction_trace_id":null`) {
		t.Fatalf("output %s, want explicit nulls", out)
	}
}

func TestBriefPredictionIDsTraced(t *testing.T) {
	s := newStack(t, llm.Router{}, func(d *peas.Deps) { d.Tracer = fakeTracer{} })
	ch := s.pending(t)
	var b peas.Brief
	raw, _ := s.db.State(context.Background(), peas.NSBriefs, ch.BriefID)
	json.Unmarshal(raw, &b)
	if b.TraceID == nil || *b.TraceID != strings.Repeat("ab", 16) || b.SpanID == nil || *b.SpanID != strings.Repeat("cd", 8) {
		t.Fatalf("prediction ids %v %v, want the span's", b.TraceID, b.SpanID)
	}
}

func TestBriefWatchCitesNothing(t *testing.T) {
	s := newStack(t, llm.Router{})
	res, err := s.call("", peas.ToolDetect, `{"location_id":"I-94:MM88-EB","sensor_readings":`+calm+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var det peas.DetectOutput
	json.Unmarshal(res.Output, &det)
	sig, _ := json.Marshal(det.Signature)
	out, err := s.call(res.Trace, peas.ToolBrief, `{"signature":`+string(sig)+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var b peas.BriefOutput
	json.Unmarshal(out.Output, &b)
	if b.CitationIncluded || strings.Contains(b.Text, "Galesburg") || b.Urgency != "low" {
		t.Fatalf("watch brief %+v, want no citation and low urgency", b)
	}
}
