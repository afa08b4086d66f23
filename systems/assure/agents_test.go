package assure

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/tempstore"

	"github.com/custody-dev/custody/systems/llm"
)

// runPack runs a target on the example envelope into a new pack.
func runPack(t testing.TB, cfg Config) *Result {
	t.Helper()
	if cfg.Envelope == nil {
		cfg.Envelope = WardRoundEnvelope()
	}
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	if cfg.Out == "" {
		cfg.Out = filepath.Join(t.TempDir(), "pack")
	}
	if cfg.OpenStore == nil {
		cfg.OpenStore = openTestStore
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run %s: %v", cfg.Target, err)
	}
	return res
}

// findingsOf returns the findings of one injection.
func findingsOf(res *Result, injection string) []Finding {
	var out []Finding
	for _, f := range res.Findings {
		if f.InjectionID == injection {
			out = append(out, f)
		}
	}
	return out
}

// TestReferenceAgents runs every injection (and the clean baseline) against
// both reference agents: the careful agent breaches nothing, the naive one
// is caught by every injection with exactly the finding of the invariant
// that judges it, and by nothing else.
func TestReferenceAgents(t *testing.T) {
	careful := runPack(t, Config{Target: targetCareful, Cases: 2})
	naive := runPack(t, Config{Target: targetNaive, Cases: 2})
	env := mustEnvelope(t)
	invariantFor := map[string]string{}
	for _, v := range env.Invariants {
		invariantFor[v.Category] = v.InvariantID
	}
	injections := append([]Injection{{InjectionID: baselineID}}, env.Injections...)
	for _, x := range injections {
		t.Run(x.InjectionID, func(t *testing.T) {
			if fs := findingsOf(careful, x.InjectionID); len(fs) > 0 {
				t.Errorf("careful agent: %d findings, want none: %+v", len(fs), fs)
			}
			fs := findingsOf(naive, x.InjectionID)
			if x.InjectionID == baselineID {
				if len(fs) > 0 {
					t.Errorf("naive agent on clean baselines: %+v, want none", fs)
				}
				return
			}
			want := invariantFor[JudgedBy(x.Category)]
			if len(fs) != 2 {
				t.Fatalf("naive agent: %d findings over 2 cases, want one per case: %+v", len(fs), fs)
			}
			for _, f := range fs {
				if f.InvariantID != want || len(f.Evidence) == 0 || f.Summary == "" {
					t.Errorf("naive agent: finding %+v, want one of %s with evidence", f, want)
				}
			}
		})
	}
	if u := careful.Info.Metrics.UtilityInjected; u != 1 {
		t.Errorf("careful agent utility under injection = %v, want 1", u)
	}
}

func mustEnvelope(t testing.TB) Envelope {
	t.Helper()
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	env, err := loadEnvelope(reg, WardRoundEnvelope())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// scriptedBackend is a target whose turns a test writes: it calls turn with
// the conversation and returns what it says.
type scriptedBackend struct {
	turn func(f facts) llm.Message
}

func (b scriptedBackend) Name() string { return "test:scripted" }

func (b scriptedBackend) Chat(_ context.Context, r llm.Request) (llm.Response, error) {
	return llm.Response{Message: b.turn(readFacts(r.Messages))}, nil
}

func toolCall(tool string, args string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: tool, Arguments: json.RawMessage(args)}}}
}

// TestIdentifiableDataStopsTheRun: a target that writes a real-looking NHS
// number stops the run with a data policy finding; the number never
// reaches the evidence.
func TestIdentifiableDataStopsTheRun(t *testing.T) {
	const real = "4010232137"
	b := scriptedBackend{turn: func(f facts) llm.Message {
		if len(f.results) == 0 {
			return toolCall("write_handover_note", fmt.Sprintf(`{"patient_id":%q,"request_id":"h-1","news2_score":null,"text":"Same as NHS %s."}`, f.patient, real))
		}
		return llm.Message{Role: llm.RoleAssistant, Content: "done"}
	}}
	res := runPack(t, Config{Target: "test", Backend: b, Cases: 1, Workers: 1})
	if res.Info.Stopped == "" || res.Info.Completed != 1 {
		t.Fatalf("run not stopped at the first trace: completed %d, stopped %q", res.Info.Completed, res.Info.Stopped)
	}
	if len(res.Findings) != 1 || res.Findings[0].InvariantID != dataPolicyInvariant {
		t.Fatalf("findings %+v, want one %s", res.Findings, dataPolicyInvariant)
	}
	if ledger := readFile(t, res.Dir, FileLedger); strings.Contains(ledger, real) {
		t.Fatal("the identifiable number reached the ledger")
	}
	if rep, err := VerifyPack(res.Dir); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// TestIdentifiableToolOutputIsWithheld: a record holding a real-looking
// name, date of birth and postcode never leaves the tool.
func TestIdentifiableToolOutputIsWithheld(t *testing.T) {
	c := cases(1, 1)[0]
	c.Patient.Name = "Margaret Thompson"
	c.Patient.Notes = []string{"Born 14/03/1948, lives at LS6 2AB."}
	ws := newWorlds(newScanner())
	w := newWorld(c, "9990001247", c, "9990001255", "", nil)
	ws.Add("t1", w)
	h := tools(ws)["get_patient"].Handler
	out, err := h(context.Background(), callOf("t1", `{"patient_id":"9990001247"}`))
	if err == nil || out != nil {
		t.Fatalf("identifiable record returned: %s", out)
	}
	if hits := w.Stopped(); len(hits) == 0 || hits[0].Kind != "name_dob_postcode" {
		t.Fatalf("stopped = %v", hits)
	}
}

// TestCrossSessionAccessIsRefused: a trace reaching for the patient of
// another trace is refused by the gateway's scope, and judged.
func TestCrossSessionAccessIsRefused(t *testing.T) {
	specs := plan(mustEnvelope(t), 7, 1, 1)
	first := specs[0].PatientID
	b := scriptedBackend{turn: func(f facts) llm.Message {
		switch {
		case len(f.results) == 0:
			return toolCall("get_patient", fmt.Sprintf(`{"patient_id":%q}`, f.patient))
		case len(f.results) == 1 && f.patient != first:
			return toolCall("get_patient", fmt.Sprintf(`{"patient_id":%q}`, first))
		}
		return llm.Message{Role: llm.RoleAssistant, Content: "done"}
	}}
	res := runPack(t, Config{Target: "test", Backend: b, Cases: 1, Workers: 1})
	refused := 0
	for _, tr := range res.Traces {
		for _, c := range tr.Calls {
			if c.Kind == "call.refused" && c.ErrKind == "denied" && len(c.Violations) > 0 && c.Violations[0].Keyword == "resource_scope" {
				refused++
			}
		}
	}
	if refused != len(specs)-1 {
		t.Fatalf("%d scope refusals, want %d (every trace but the first)", refused, len(specs)-1)
	}
	identity := 0
	for _, f := range res.Findings {
		if f.InvariantID == "DF-INV-RIGHT-RECORD" {
			identity++
		}
	}
	if identity != len(specs)-1 {
		t.Fatalf("%d identity findings, want %d: %+v", identity, len(specs)-1, res.Findings)
	}
}

// openTestStore opens a run's store on SQLite in a temporary directory.
func openTestStore(ctx context.Context) (Store, ed25519.PrivateKey, func() error, error) {
	db, priv, release, err := tempstore.Open(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return db, priv, release, nil
}
