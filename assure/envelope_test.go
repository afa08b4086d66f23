package assure

import (
	"bytes"
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
