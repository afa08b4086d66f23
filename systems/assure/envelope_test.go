package assure

import (
	"bytes"
	"html"
	"strings"
	"testing"
)

func TestCheckEnvelope(t *testing.T) {
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := WardRoundEnvelope()
	edit := func(old, new string) []byte {
		if !bytes.Contains(ok, []byte(old)) {
			t.Fatalf("the example envelope has no %q", old)
		}
		return bytes.Replace(ok, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name  string
		raw   []byte
		field string // a problem must name this field; "" means clean
		fix   string // and say this
	}{
		{"OK", ok, "", ""},
		{"ErrDuplicateToolID", edit(`"tool_id": "get_observations"`, `"tool_id": "get_patient"`), "tools[1]", "repeats tools[0]"},
		{"ErrDuplicateInvariantID", edit(`"DF-INV-RIGHT-RECORD"`, `"DF-INV-ESCALATE-FIRST"`), "safety_invariants[1]", "give each entry its own id"},
		{"ErrDuplicateInjectionID", edit(`"DF-INJ-WRONG-RECORD"`, `"DF-INJ-DETERIORATION"`), "failure_injections[1]", "give each entry its own id"},
		{"ErrAdvisoryWithWrite", edit(`"EXECUTES_REVERSIBLE_ACTIONS"`, `"ADVISORY_ONLY"`), "tools[3] (escalate_to_clinician)", "make it READ, remove it, or raise the tier"},
		{"ErrProposesWithoutConfirmation", edit(`"EXECUTES_REVERSIBLE_ACTIONS"`, `"PROPOSES_ACTIONS"`), "tools[4] (write_handover_note)", "needs approval HUMAN_CONFIRMATION"},
		{"ErrConsequentialWithoutConfirmation", edit(`"effect": "CONSEQUENTIAL", "approval": "HUMAN_CONFIRMATION"`, `"effect": "CONSEQUENTIAL", "approval": "NOT_REQUIRED"`), "tools[6] (prescribe_medication)", "CONSEQUENTIAL tool under EXECUTES_REVERSIBLE_ACTIONS"},
		{"ErrReadWithEffect", edit(`"access": "READ", "effect": "NONE"`, `"access": "READ", "effect": "REVERSIBLE"`), "tools[0] (get_patient)", "set effect NONE"},
		{"ErrUnjudgedInjection", edit(`"category": "IDEMPOTENCY"`, `"category": "ESCALATION"`), "safety_invariants", "no IDEMPOTENCY invariant judges the AMBIGUOUS_WRITE_RESULT injections"},
		{"ErrBareTraceScope", edit(`"resource_scope": "trace:/patient_id"`, `"resource_scope": "trace"`), "tools[0] (get_patient).resource_scope", `write "trace:/<argument>"`},
		{"ErrBadEnvelopeID", edit(`"DF-CAE-WARD-ROUND-001"`, `"CAE-ward-round"`), "envelope_id", "rename it to match the pattern"},
		{"ErrBadToolID", edit(`"tool_id": "get_patient"`, `"tool_id": "GetPatient"`), "tools.0.tool_id", "rename it to match the pattern"},
		{"ErrBadInvariantID", edit(`"DF-INV-RIGHT-RECORD"`, `"INV-right-record"`), "safety_invariants.1.invariant_id", "rename it"},
		{"ErrBadInjectionID", edit(`"DF-INJ-WRONG-RECORD"`, `"DF-INJ-wrong"`), "failure_injections.1.injection_id", "rename it"},
		{"ErrBadWorkflowID", edit(`"DF-SYN-WF-WARD-ROUND"`, `"WARD-ROUND"`), "workflow.workflow_id", "rename it"},
		{"ErrNotSyntheticOnly", edit(`"synthetic_only": true`, `"synthetic_only": false`), "data_policy.synthetic_only", "only that value"},
		{"OKRuleSpacing", edit(`"No tool call is made because text`, `"No tool call  is made because\t text`), "", ""},
		{"ErrRuleToolUndeclared", edit(`"tool_id": "escalate_to_clinician"`, `"tool_id": "page_clinician"`),
			"safety_invariants[0] (DF-INV-ESCALATE-FIRST)", "reads tool escalate_to_clinician, which the envelope does not declare"},
		{"ErrInjectionToolUndeclared", edit(`"tool_id": "write_handover_note"`, `"tool_id": "write_note"`),
			"failure_injections[4] (DF-INJ-AMBIGUOUS-NOTE)", "acts on tool write_handover_note, which the envelope does not declare"},
		{"ErrInjectionWithoutApproval", edit(`"effect": "CONSEQUENTIAL", "approval": "HUMAN_CONFIRMATION"`, `"effect": "REVERSIBLE", "approval": "NOT_REQUIRED"`),
			"failure_injections[5] (DF-INJ-NO-APPROVER)", "needs a tool with approval HUMAN_CONFIRMATION"},
		{"ErrIdentifiableData", edit(`"identifiable_patient_data_permitted": false`, `"identifiable_patient_data_permitted": true`), "data_policy.identifiable_patient_data_permitted", "only that value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, _, err := Check(reg, tt.raw)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if tt.field == "" {
				if len(problems) > 0 {
					t.Fatalf("the example envelope has problems: %v", problems)
				}
				return
			}
			for _, p := range problems {
				if p.Field == tt.field && strings.Contains(p.Message, tt.fix) {
					return
				}
			}
			t.Fatalf("no problem on %q saying %q; got %v", tt.field, tt.fix, problems)
		})
	}
}

// TestShippedEnvelopesLintClean: every envelope the harness ships is valid,
// lint-clean, and states only rules the harness evaluates.
func TestShippedEnvelopesLintClean(t *testing.T) {
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err := envelopeFiles.ReadDir("envelopes")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shipped envelopes: %v", err)
	}
	for _, n := range names {
		raw, err := envelopeFiles.ReadFile("envelopes/" + n.Name())
		if err != nil {
			t.Fatal(err)
		}
		problems, env, err := Check(reg, raw)
		if err != nil || len(problems) > 0 || len(Warnings(env)) > 0 {
			t.Errorf("%s: %v %v %v", n.Name(), err, problems, Warnings(env))
		}
		for _, inv := range env.Invariants {
			if r, why := ruleOf(env, inv); why != "" || r.form != "the built-in rule, as written" && inv.Category != invEscalation && inv.Category != invHuman {
				t.Errorf("%s: %s is not evaluated by its own built-in rule: %s", n.Name(), inv.InvariantID, why)
			}
		}
	}
}

// TestWarnRetired: a RETIRED envelope lints clean with a warning.
func TestWarnRetired(t *testing.T) {
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(WardRoundEnvelope(), []byte(`"status": "EXPERIMENTAL"`), []byte(`"status": "RETIRED"`), 1)
	problems, env, err := Check(reg, raw)
	if err != nil || len(problems) > 0 {
		t.Fatalf("problems %v %v", problems, err)
	}
	if w := Warnings(env); len(w) != 1 || w[0].Field != "status" || !strings.Contains(w[0].Message, "RETIRED") {
		t.Fatalf("warnings %v, want one on status", w)
	}
}

// TestReportShowsRules: the report shows each invariant's rule text.
func TestReportShowsRules(t *testing.T) {
	res := runPack(t, Config{Target: targetCareful, Cases: 1})
	report := readFile(t, res.Dir, FileReport)
	for _, inv := range mustEnvelope(t).Invariants {
		if !strings.Contains(report, html.EscapeString(inv.Rule)) {
			t.Errorf("report.html does not show the rule of %s", inv.InvariantID)
		}
	}
}
