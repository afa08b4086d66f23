package assure

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/upstream"
)

// labTool is an envelope tool the synthetic world does not implement.
const labTool = `{"tool_id": "get_lab_results", "purpose": "Read the latest blood results.", "access": "READ", "effect": "NONE", "approval": "NOT_REQUIRED", "resource_scope": "trace:/patient_id", "maximum_calls_per_trace": 2},
    {"tool_id": "get_patient"`

// withTool returns the example envelope with the lab tool declared.
func withTool(t *testing.T) []byte {
	t.Helper()
	raw := WardRoundEnvelope()
	out := bytes.Replace(raw, []byte(`{"tool_id": "get_patient"`), []byte(labTool), 1)
	if bytes.Equal(out, raw) {
		t.Fatal("the example envelope has no get_patient tool")
	}
	return out
}

// labServer is a plain HTTP endpoint: the tool a team already has.
func labServer(t *testing.T, calls *atomic.Int64, reply string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"patient_id"`) {
			http.Error(w, "no patient", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// openUpstream opens an upstream set offering one governed HTTP tool.
func openUpstream(t *testing.T, name, url string) *upstream.Set {
	t.Helper()
	schema := json.RawMessage(`{"type": "object", "properties": {"patient_id": {"type": "string"}}, "required": ["patient_id"]}`)
	out := json.RawMessage(`{"type": "object", "properties": {"potassium": {"type": "number"}}, "required": ["potassium"]}`)
	set, err := upstream.Open(context.Background(), upstream.Config{
		HTTPTools:  []upstream.HTTPTool{{Name: name, URL: url, Input: schema, Output: out, Description: "blood results"}},
		Governance: upstream.Governance{name: {Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// labFirst is a target that reads the lab results of its patient first,
// then works as the careful reference agent.
type labFirst struct{ careful scripted }

func (labFirst) Name() string { return "lab-first" }

func (b labFirst) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	for _, m := range r.Messages {
		if m.Role == llm.RoleTool && m.Name == "get_lab_results" {
			rest := make([]llm.Message, 0, len(r.Messages))
			for _, m := range r.Messages {
				if m.Name != "get_lab_results" && !(len(m.ToolCalls) == 1 && m.ToolCalls[0].Name == "get_lab_results") {
					rest = append(rest, m)
				}
			}
			r.Messages = rest
			return b.careful.Chat(ctx, r)
		}
	}
	id := firstTestID(r.Messages[1].Content)
	args, _ := json.Marshal(map[string]string{"patient_id": id})
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "lab-1", Name: "get_lab_results", Arguments: args}}}}, nil
}

// TestBindUpstreamTool: an envelope tool the harness does not implement is
// refused alone, and bound to a configured HTTP tool it runs through the
// gateway in every trace, recorded like the synthetic tools.
func TestBindUpstreamTool(t *testing.T) {
	raw := withTool(t)
	_, err := Run(context.Background(), Config{Envelope: raw, Target: targetCareful, Cases: 1, Out: filepath.Join(t.TempDir(), "p"), OpenStore: openTestStore})
	if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "declares tools without an implementation: get_lab_results") {
		t.Fatalf("run without the tool: %v", err)
	}
	var calls atomic.Int64
	srv := labServer(t, &calls, `{"potassium": 4.1}`)
	res := runPack(t, Config{Envelope: raw, Backend: labFirst{scripted{Careful: true}}, Cases: 1, Upstream: openUpstream(t, "get_lab_results", srv.URL)})
	if n := calls.Load(); n != 7 {
		t.Fatalf("the HTTP tool was called %d times, want once per trace (7)", n)
	}
	if len(res.Errored()) != 0 || len(res.Findings) != 0 {
		t.Fatalf("errored %d, findings %+v", len(res.Errored()), res.Findings)
	}
	for _, tr := range res.Traces {
		ok := false
		for _, c := range tr.Calls {
			ok = ok || (c.Tool == "get_lab_results" && c.OK() && strings.Contains(string(c.Output), "4.1"))
		}
		if !ok {
			t.Fatalf("trace %s has no successful get_lab_results call on the ledger", tr.Spec.TraceID)
		}
	}
	if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// TestBoundToolDataPolicy: identifiable data in an upstream tool's output
// is withheld and stops the run, as in the synthetic tools.
func TestBoundToolDataPolicy(t *testing.T) {
	var calls atomic.Int64
	srv := labServer(t, &calls, `{"potassium": 4.1, "note": "NHS number 943 476 5919"}`)
	res := runPack(t, Config{Envelope: withTool(t), Backend: labFirst{scripted{Careful: true}}, Cases: 1, Workers: 1, Upstream: openUpstream(t, "get_lab_results", srv.URL)})
	if res.Info.Stopped == "" || len(res.Findings) == 0 || res.Findings[0].InvariantID != dataPolicyInvariant {
		t.Fatalf("stopped %q, findings %+v; want the data policy to stop the run", res.Info.Stopped, res.Findings)
	}
	if strings.Contains(readFile(t, res.Dir, FileLedger), "943 476 5919") {
		t.Fatal("the identifiable output reached the ledger")
	}
}

// TestBoundInjectionRefused: an injection acting on a tool bound upstream
// cannot be injected, so the run is refused rather than passing it
// untested.
func TestBoundInjectionRefused(t *testing.T) {
	var calls atomic.Int64
	srv := labServer(t, &calls, `{"potassium": 4.1}`)
	_, err := Run(context.Background(), Config{Envelope: WardRoundEnvelope(), Target: targetCareful, Cases: 1, Out: filepath.Join(t.TempDir(), "p"),
		OpenStore: openTestStore, Upstream: openUpstream(t, "get_observations", srv.URL)})
	msg := custody.ErrorMessage(err)
	if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(msg, "DF-INJ-OBS-OUTAGE (DEPENDENCY_OUTAGE) acts on get_observations") || !strings.Contains(msg, "DF-INJ-DETERIORATION") {
		t.Fatalf("run: %v", err)
	}
}
