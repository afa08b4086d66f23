package peas_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// pushy is a model that goes on past a watch signature: it briefs every
// signature and asks for its approval.
type pushy struct{}

func (pushy) Name() string { return "pushy" }

func (pushy) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	results := map[string]string{}
	names := map[string]string{}
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
		if m.Role == llm.RoleTool {
			results[names[m.ToolCallID]] = m.Content
		}
	}
	call := func(name string, args any) (llm.Response, error) {
		raw, _ := json.Marshal(args)
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "call_" + name, Name: name, Arguments: raw}}}}, nil
	}
	var det peas.DetectOutput
	var brief peas.BriefOutput
	switch {
	case results[peas.ToolDetect] == "":
		return peas.Planner{}.Chat(ctx, r)
	case results[peas.ToolBrief] == "":
		json.Unmarshal([]byte(results[peas.ToolDetect]), &det)
		return call(peas.ToolBrief, map[string]any{"signature": det.Signature})
	case results[peas.ToolApprove] == "":
		json.Unmarshal([]byte(results[peas.ToolBrief]), &brief)
		return call(peas.ToolApprove, map[string]any{"brief_id": brief.BriefID, "target_operator_id": "mdot-ops-A"})
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done"}}, nil
}

// TestChainStopsAtWatchWhateverTheModel: a model that would brief a
// watch signature and page an operator is stopped after the detector.
func TestChainStopsAtWatchWhateverTheModel(t *testing.T) {
	s := newStack(t, llm.Router{Main: pushy{}, Edge: llm.Template{}})
	ch, err := s.sys.Start(context.Background(), s.gw, location, json.RawMessage(calm))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageWatch || ch.BriefID != "" || ch.ApprovalID != "" {
		t.Fatalf("chain = %+v, want stopped at watch without a brief or an approval", ch)
	}
	if n := len(ch.Transcript.Outcomes); n != 1 {
		t.Fatalf("%d tool calls ran, want only the detector's", n)
	}
	as, err := s.approvals.List(context.Background(), custody.ApprovalPending)
	if err != nil || len(as) != 0 {
		t.Fatalf("pending approvals %v (%v), want none", as, err)
	}
}

// watchBrief composes a brief over a watch signature in a new trace and
// returns the trace, the signature id and the brief id.
func (s *stack) watchBrief(t *testing.T) (trace, sigID, briefID string) {
	t.Helper()
	trace, sig := s.detectIn(t, calm)
	res, err := s.call(trace, peas.ToolBrief, `{"signature":`+string(sig)+`}`)
	if err != nil {
		t.Fatal(err)
	}
	var b peas.BriefOutput
	json.Unmarshal(res.Output, &b)
	var sg peas.Signature
	json.Unmarshal(sig, &sg)
	return trace, sg.SignatureID, b.BriefID
}

// TestApprovalOfWatchBriefNeedsOperatorAsk: request_approval refuses a
// brief built on a watch signature until an operator asked for it.
func TestApprovalOfWatchBriefNeedsOperatorAsk(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	trace, sigID, briefID := s.watchBrief(t)
	args := `{"brief_id":"` + briefID + `","target_operator_id":"mdot-ops-A"}`
	_, err := s.call(trace, peas.ToolApprove, args)
	s.refusedOnLedger(t, err, custody.EDENIED)
	if as, _ := s.approvals.List(ctx, custody.ApprovalPending); len(as) != 0 {
		t.Fatalf("refused request paged: %v", as)
	}
	if _, err := s.sys.AskWatchApproval(ctx, sigID, "op-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(trace, peas.ToolApprove, args); err != nil {
		t.Fatalf("request_approval after the operator asked: %v", err)
	}
}

func TestAskWatchApprovalRefusals(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	_, watchSig, _ := s.watchBrief(t)
	critical := s.pending(t)
	tests := []struct {
		name, sig, operator, kind string
	}{
		{"NoOperator", watchSig, "", custody.EINVALID},
		{"NotWatch", critical.SignatureID, "op-1", custody.EINVALID},
		{"UnknownSignature", forgedID, "op-1", custody.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.sys.AskWatchApproval(ctx, tt.sig, tt.operator)
			if custody.ErrorKind(err) != tt.kind {
				t.Fatalf("error %v, want kind %s", err, tt.kind)
			}
		})
	}
}

// TestConsoleWatchAskIsTheOperators: the console records the ask in the
// name of the authenticated operator only; a typed name is refused.
func TestConsoleWatchAskIsTheOperators(t *testing.T) {
	s := newStack(t, llm.Router{}, func(d *peas.Deps) {
		d.OperatorOf = func(r *http.Request) string { return r.Header.Get("X-Test-Operator") }
	})
	_, sigID, _ := s.watchBrief(t)
	h := s.sys.Handler()
	post := func(body, operator string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/apps/peas/api/watch-ask", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if operator != "" {
			req.Header.Set("X-Test-Operator", operator)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := post(`{"signature_id":"`+sigID+`"}`, ""); w.Code != http.StatusForbidden {
		t.Fatalf("unauthenticated ask: status %d, want 403", w.Code)
	}
	if w := post(`{"signature_id":"`+sigID+`","operator_id":"mallory"}`, "op-7"); w.Code != http.StatusBadRequest {
		t.Fatalf("ask with a typed operator: status %d, want 400", w.Code)
	}
	w := post(`{"signature_id":"`+sigID+`"}`, "op-7")
	var ask peas.WatchAsk
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &ask) != nil || ask.Operator != "op-7" {
		t.Fatalf("ask: status %d body %s, want recorded for op-7", w.Code, w.Body)
	}
}
