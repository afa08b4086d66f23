package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
)

// impls returns the example tools by name.
func impls() map[string]gate.Tool {
	out := map[string]gate.Tool{}
	for _, t := range example.Tools(nil, time.Now) {
		out[t.Spec.Name] = t
	}
	return out
}

func TestLoadEnvelope(t *testing.T) {
	raw, err := os.ReadFile("testdata/envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := loadRegistry(t)
	env, err := gate.LoadEnvelope(raw, reg)
	if err != nil {
		t.Fatalf("LoadEnvelope: %v", err)
	}
	if env.ID != "DF-CAE-EXAMPLE-1" || len(env.Tools) != 3 {
		t.Fatalf("envelope = %s with %d tools", env.ID, len(env.Tools))
	}
	if d := env.Tools[1]; d.Name != "write_note" || d.Approval != custody.HumanConfirmation || d.Input != "" {
		t.Fatalf("write_note declared as %+v", d)
	}
	tools, err := gate.Bind(env, impls())
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}
	note := tools[1].Spec
	if note.Name != "write_note" || note.Approval != custody.HumanConfirmation || note.MaxCallsPerTrace != 3 || note.Scope != "SESSION" {
		t.Fatalf("the declaration did not override the implementation: %+v", note)
	}
	if tools[0].Spec.MaxCallsPerTrace != 10 || tools[0].Spec.Input == "" {
		t.Fatalf("get_time = %+v", tools[0].Spec)
	}

	h := newHarness(t)
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: h.db, Approvals: h.svc, State: h.db, Logger: discard()}, env.ID, tools)
	if err != nil {
		t.Fatalf("gateway on the loaded envelope: %v", err)
	}
	if offered := gw.Envelope(); offered.ID != env.ID || len(offered.Tools) != 3 || !reflect.DeepEqual(offered.Tools[1], note) {
		t.Fatalf("the gateway offers %+v", offered)
	}
	_, err = gw.Call(context.Background(), custody.Call{Trace: "t", Tool: "write_note", Args: json.RawMessage(`{"title":"a","text":"b"}`)})
	wantKind(t, err, custody.EPENDING)
}

func TestLoadEnvelopeRefused(t *testing.T) {
	raw, err := os.ReadFile("testdata/envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	withTool := bytes.Replace(raw, []byte(`"tools": [`), []byte(`"tools": [
    {"tool_id": "delete_all", "purpose": "x", "access": "WRITE", "effect": "CONSEQUENTIAL", "approval": "HUMAN_CONFIRMATION", "resource_scope": "ALL", "maximum_calls_per_trace": 1},`), 1)
	extra := impls()
	extra["send_email"] = extra["get_time"]
	tests := []struct {
		name  string
		raw   []byte
		impls map[string]gate.Tool
		kind  string
		names string // text the error must name
	}{
		{"ErrNotAnEnvelope", []byte(`{"envelope_id":"DF-CAE-X"}`), impls(), custody.EINVALID, "required"},
		{"ErrBadAccess", bytes.Replace(raw, []byte(`"access": "READ"`), []byte(`"access": "READ_ONLY"`), 1), impls(), custody.EINVALID, "/tools/0/access"},
		{"ErrDuplicateKey", bytes.Replace(raw, []byte(`"version": "0.1.0",`), []byte(`"version": "0.1.0", "version": "0.1.1",`), 1), impls(), custody.EINVALID, "version"},
		{"ErrUnimplemented", withTool, impls(), custody.EINVALID, "delete_all"},
		{"ErrUndeclared", raw, extra, custody.EINVALID, "send_email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := gate.LoadEnvelope(tt.raw, loadRegistry(t))
			if err == nil {
				_, err = gate.Bind(env, tt.impls)
			}
			ce := wantKind(t, err, tt.kind)
			text := ce.Message
			for _, v := range ce.Violations {
				text += " " + v.Instance + " " + v.Message
			}
			if !strings.Contains(text, tt.names) {
				t.Errorf("error %q does not name %q", text, tt.names)
			}
		})
	}
}

func TestNewFailsClosed(t *testing.T) {
	h := newHarness(t)
	good := func() gate.Tool { return gate.Tool{Spec: spec("echo", custody.Read), Handler: ok} }
	with := func(f func(*gate.Tool)) []gate.Tool {
		tool := good()
		f(&tool)
		return []gate.Tool{tool}
	}
	cfg := gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc, State: h.db}
	tests := []struct {
		name  string
		cfg   gate.Config
		tools []gate.Tool
	}{
		{"ErrNoRegistry", gate.Config{Ledger: h.db, Approvals: h.svc}, with(func(*gate.Tool) {})},
		{"ErrNoLedger", gate.Config{Registry: h.reg, Approvals: h.svc}, with(func(*gate.Tool) {})},
		{"ErrNoApprovals", gate.Config{Registry: h.reg, Ledger: h.db}, with(func(*gate.Tool) {})},
		{"ErrUnknownInput", cfg, with(func(t *gate.Tool) { t.Spec.Input = testContract + "#/$defs/nope" })},
		{"ErrUnknownOutput", cfg, with(func(t *gate.Tool) { t.Spec.Output = "no-such-schema" })},
		{"ErrNoHandler", cfg, with(func(t *gate.Tool) { t.Handler = nil })},
		{"ErrNoAccess", cfg, with(func(t *gate.Tool) { t.Spec.Access = "" })},
		{"ErrUnknownEffect", cfg, with(func(t *gate.Tool) { t.Spec.Effect = "HARMLESS" })},
		{"ErrNoApprovalPolicy", cfg, with(func(t *gate.Tool) { t.Spec.Approval = "" })},
		{"ErrBareTraceScope", cfg, with(func(t *gate.Tool) { t.Spec.Scope = "trace" })},
		{"ErrBudgetWithoutState", gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc}, with(func(t *gate.Tool) { t.Spec.MaxCallsPerTrace = 1 })},
		{"ErrLinkWithoutRef", cfg, with(func(t *gate.Tool) { t.Spec.Links = []custody.Link{{Arg: "/brief_id"}} })},
		{"ErrNestedApprovalLink", cfg, with(func(t *gate.Tool) { t.Spec.Links = []custody.Link{{Arg: "/a/b", Approval: true}} })},
		{"ErrDuplicateTool", cfg, []gate.Tool{good(), good()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gate.New(tt.cfg, "e", tt.tools); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	gw, err := gate.New(cfg, "e", with(func(*gate.Tool) {}))
	if err != nil {
		t.Fatalf("New refused a good envelope: %v", err)
	}
	if specs := gw.Tools(); len(specs) != 1 || specs[0].Name != "echo" {
		t.Fatalf("Tools = %+v", specs)
	}
	if _, ok := gw.Tool("echo"); !ok {
		t.Fatal("Tool(echo) not found")
	}
	if _, ok := gw.Tool("nope"); ok {
		t.Fatal("Tool(nope) found")
	}
}
