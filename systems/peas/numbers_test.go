package peas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// floaty is the scripted planner writing every integer of its tool calls
// the way JSON Schema still counts as an integer: 300 as 3e2, 150 as
// 150.0.
type floaty struct{}

func (floaty) Name() string { return "floaty" }

func (floaty) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	resp, err := peas.Planner{}.Chat(ctx, r)
	for i, c := range resp.Message.ToolCalls {
		var v any
		d := json.NewDecoder(bytes.NewReader(c.Arguments))
		d.UseNumber()
		if d.Decode(&v) == nil {
			var b strings.Builder
			writeFloaty(&b, v)
			resp.Message.ToolCalls[i].Arguments = json.RawMessage(b.String())
		}
	}
	return resp, err
}

// writeFloaty writes v as JSON with integers spelled N.0, or Me2 when a
// multiple of 100.
func writeFloaty(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(k)
			b.Write(kj)
			b.WriteByte(':')
			writeFloaty(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeFloaty(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		n, err := x.Int64()
		switch {
		case err != nil:
			b.WriteString(x.String())
		case n != 0 && n%100 == 0:
			fmt.Fprintf(b, "%de2", n/100)
		default:
			fmt.Fprintf(b, "%d.0", n)
		}
	default:
		raw, _ := json.Marshal(x)
		b.Write(raw)
	}
}

// TestIntegersSpelledAsFloatsRunEveryTool: every tool of the chain gets
// contract-valid arguments with its integers spelled 1800.0 or 18e2; each
// runs, and the approval the sign update spends is not burned.
func TestIntegersSpelledAsFloatsRunEveryTool(t *testing.T) {
	s := newStack(t, llm.Router{Main: floaty{}, Edge: llm.Template{}})
	ctx := context.Background()
	ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(whiteout))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StagePending {
		t.Fatalf("chain %+v (final %q), want pending", ch, ch.Final)
	}
	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageNotified {
		t.Fatalf("stage %q (final %q), want notified", ch.Stage, ch.Final)
	}
	ran := map[string]bool{}
	floated := false
	for _, o := range ch.Transcript.Outcomes {
		if o.Err != nil {
			t.Errorf("%s refused: %v", o.Call.Name, o.Err)
		}
		ran[o.Call.Name] = true
		floated = floated || strings.Contains(string(o.Call.Arguments), "e2") || strings.Contains(string(o.Call.Arguments), ".0")
	}
	for _, tool := range []string{peas.ToolDetect, peas.ToolBrief, peas.ToolApprove, peas.ToolVMS, peas.ToolNotify} {
		if !ran[tool] {
			t.Errorf("%s never ran", tool)
		}
	}
	if !floated {
		t.Fatal("no call spelled an integer as a float: the test proves nothing")
	}
	s.signShows(t, proposed)
}

// TestHandlersTakeIntegersAsFloats: each handler with an integer argument
// takes it written 1800.0 and 3e2.
func TestHandlersTakeIntegersAsFloats(t *testing.T) {
	s := newStack(t, llm.Router{})
	res, err := s.call("", peas.ToolDetect, `{"location_id":"`+location+`","sensor_window_s":3e2,"sensor_readings":`+
		strings.Replace(whiteout, `"visibility_ft":150`, `"visibility_ft":150.0`, 1)+`}`)
	if err != nil {
		t.Fatalf("detect with 3e2 and 150.0: %v", err)
	}
	var det peas.DetectOutput
	json.Unmarshal(res.Output, &det)
	if det.Signature.Severity != peas.Critical {
		t.Fatalf("severity %q, want critical", det.Signature.Severity)
	}
	ch := s.pending(t)
	var b peas.BriefOutput
	for _, o := range ch.Transcript.Outcomes {
		if o.Call.Name == peas.ToolBrief {
			json.Unmarshal(o.Output, &b)
		}
	}
	if _, err := s.call(ch.Trace, peas.ToolApprove, `{"brief_id":"`+b.BriefID+`","target_operator_id":"op","expires_in_s":1800.0}`); err != nil {
		t.Fatalf("request_approval with 1800.0: %v", err)
	}
	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	args := `{"approval_request_id":"` + ch.ApprovalID + `","billboard_id":"` + sign + `","message":"` + proposed + `","duration_s":1800.0}`
	if _, err := s.call(ch.Trace, peas.ToolVMS, args); err != nil {
		t.Fatalf("issue_vms_update with 1800.0: %v", err)
	}
	s.signShows(t, proposed)
	if _, err := s.call(ch.Trace, peas.ToolVMS, args); err == nil {
		t.Fatal("the approval ran twice")
	}
}
