package brain

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody/systems/llm"
)

// fakeModel is an OpenAI-compatible chat server that always says reply.
func fakeModel(t *testing.T, reply string) (llm.Backend, *atomic.Int64) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": reply}}}})
	}))
	t.Cleanup(ts.Close)
	b, err := llm.Open("openai://" + strings.TrimPrefix(ts.URL, "http://") + "/v1/fake-model")
	if err != nil {
		t.Fatal(err)
	}
	return b, &calls
}

func TestComposerWordsOnlyTheBody(t *testing.T) {
	room := exampleRoom(t)
	packet := marshal(t, build(t, room, BuildOptions{Job: "detect_contradiction", Focus: "claim-core"}))
	det, err := deterministic{}.Answer(context.Background(), "detect_contradiction", packet)
	if err != nil {
		t.Fatal(err)
	}
	var want Response
	json.Unmarshal(det, &want)
	tests := []struct {
		name, reply string
		worded      bool
	}{
		{"OK", "The two claims cannot both hold; pick which one yields.", true},
		{"ErrInventsID", "Check claim-invented-99 before deciding.", false},
		{"ErrJSON", `{"summary":"x"}`, false},
		{"ErrTooLong", strings.Repeat("word ", 200), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, calls := fakeModel(t, tt.reply)
			raw, err := Composer{Backend: b}.Answer(context.Background(), "detect_contradiction", packet)
			if err != nil {
				t.Fatal(err)
			}
			if err := registry(t).Validate(outRef("detect_contradiction"), raw); err != nil {
				t.Fatalf("composed reply invalid: %v", err)
			}
			var got Response
			json.Unmarshal(raw, &got)
			if calls.Load() == 0 || len(got.Suggestions) != len(want.Suggestions) {
				t.Fatalf("calls %d, suggestions %d", calls.Load(), len(got.Suggestions))
			}
			s, w := got.Suggestions[0], want.Suggestions[0]
			if s.Summary != w.Summary || *s.Confidence != *w.Confidence || len(s.GraphUpdatesProposed) != len(w.GraphUpdatesProposed) {
				t.Errorf("the model changed a decision: %+v", s)
			}
			if worded := s.Body == tt.reply; worded != tt.worded {
				t.Errorf("body %q, worded %v, want %v", s.Body, worded, tt.worded)
			}
		})
	}
}

func TestComposerTemplateAsksNoModel(t *testing.T) {
	room := exampleRoom(t)
	packet := marshal(t, build(t, room, BuildOptions{Job: "opportunity_rank", Focus: "claim-core"}))
	got, err := Composer{Backend: llm.Template{}}.Answer(context.Background(), "opportunity_rank", packet)
	det, _ := deterministic{}.Answer(context.Background(), "opportunity_rank", packet)
	if err != nil || string(got) != string(det) {
		t.Fatalf("template composer differs from deterministic: %v", err)
	}
}
