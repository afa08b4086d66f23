package assure

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
)

// envelopeRef names the Clinical Action Envelope contract.
const envelopeRef = "https://dashfin.org/schemas/df-clinical-action-envelope-v0.1.schema.json"

// Envelope is a DF-CAE-v0.1 document: what a clinical AI workflow may and
// must do. Only the fields the harness acts on are decoded; the whole
// document is validated against its contract first.
type Envelope struct {
	ProtocolID string `json:"protocol_id"`
	EnvelopeID string `json:"envelope_id"`
	Version    string `json:"version"`
	Status     string `json:"status"`
	Workflow   struct {
		WorkflowID string `json:"workflow_id"`
		Name       string `json:"name"`
	} `json:"workflow"`
	Target struct {
		TargetID     string `json:"target_id"`
		AutonomyTier string `json:"autonomy_tier"`
		Authority    string `json:"human_acceptance_authority"`
	} `json:"target"`
	Tools      []EnvelopeTool  `json:"tools"`
	Invariants []Invariant     `json:"safety_invariants"`
	Injections []Injection     `json:"failure_injections"`
	Boundaries map[string]bool `json:"boundaries"`
}

// EnvelopeTool is one declared tool.
type EnvelopeTool struct {
	ToolID   string `json:"tool_id"`
	Purpose  string `json:"purpose"`
	Access   string `json:"access"`
	Effect   string `json:"effect"`
	Approval string `json:"approval"`
	Scope    string `json:"resource_scope"`
	MaxCalls int    `json:"maximum_calls_per_trace"`
}

// Invariant is one declared safety invariant.
type Invariant struct {
	InvariantID string `json:"invariant_id"`
	Category    string `json:"category"`
	Rule        string `json:"rule"`
	Severity    string `json:"severity_on_breach"`
	Required    string `json:"required_behaviour"`
}

// Injection is one declared failure injection.
type Injection struct {
	InjectionID string `json:"injection_id"`
	Category    string `json:"category"`
	Description string `json:"description"`
}

// judgedBy maps each injection category to the invariant category that
// judges it.
func judgedBy(injection string) string {
	return map[string]string{
		"CLINICAL_DETERIORATION":    "ESCALATION",
		"WRONG_RECORD":              "IDENTITY_AND_SCOPE",
		"INDIRECT_PROMPT_INJECTION": "INSTRUCTION_INTEGRITY",
		"DEPENDENCY_OUTAGE":         "TOOL_FAILURE",
		"AMBIGUOUS_WRITE_RESULT":    "IDEMPOTENCY",
		"MISSING_HUMAN_APPROVAL":    "HUMAN_AUTHORITY",
	}[injection]
}

// Validator validates a document against a named schema; a
// *contract.Registry is one.
type Validator interface {
	Validate(ref string, raw []byte) error
}

// Problem is one thing wrong with an envelope: the field and the fix.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// String returns "field: message".
func (p Problem) String() string { return p.Field + ": " + p.Message }

// parseEnvelope validates raw against the envelope contract and decodes it.
func parseEnvelope(v Validator, raw []byte) (Envelope, error) {
	if err := v.Validate(envelopeRef, raw); err != nil {
		return Envelope{}, err
	}
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Envelope{}, &custody.Error{Kind: custody.EINVALID, Message: "envelope: " + err.Error(), Err: err}
	}
	return env, nil
}

// Check validates raw against the envelope contract and lints it. Every
// way the document breaks its contract and every consistency problem is a
// Problem naming the field and the fix; the envelope is decoded when the
// contract holds. The error is only for a registry that cannot validate.
func Check(v Validator, raw []byte) ([]Problem, Envelope, error) {
	env, err := parseEnvelope(v, raw)
	if err != nil {
		ce := custody.AsError(err)
		if ce.Kind != custody.EINVALID {
			return nil, Envelope{}, err
		}
		return contractProblems(ce), Envelope{}, nil
	}
	return lint(env), env, nil
}

// contractProblems turns contract violations into problems.
func contractProblems(e *custody.Error) []Problem {
	if len(e.Violations) == 0 {
		return []Problem{{Field: "(document)", Message: e.Message + ": fix the JSON"}}
	}
	ps := make([]Problem, 0, len(e.Violations))
	for _, v := range e.Violations {
		field := strings.TrimPrefix(strings.ReplaceAll(v.Instance, "/", "."), ".")
		if field == "" {
			field = "(root)"
		}
		ps = append(ps, Problem{Field: field, Message: v.Message + fixHint(v)})
	}
	return ps
}

// fixHint adds what to do about a violation the contract reports.
func fixHint(v custody.Violation) string {
	switch {
	case strings.HasSuffix(v.Keyword, "/pattern"):
		return ": rename it to match the pattern"
	case strings.HasSuffix(v.Keyword, "/const"):
		return ": the contract allows only that value"
	case strings.HasSuffix(v.Keyword, "/enum"):
		return ": use one of the listed values"
	case strings.HasSuffix(v.Keyword, "/required"):
		return ": add it"
	case strings.HasSuffix(v.Keyword, "/additionalProperties"):
		return ": remove it"
	}
	return ""
}

// lint checks an envelope that is valid against its contract for
// consistency: unique ids, tools that fit the autonomy tier, an invariant
// judging every injection category, rules that read declared tools, and
// injections that act on declared tools. An invariant no judge
// understands is a warning (Warnings), not a problem: a run assesses
// everything else.
func lint(env Envelope) []Problem {
	var ps []Problem
	ps = append(ps, uniqueIDs(env)...)
	ps = append(ps, tierProblems(env)...)
	ps = append(ps, coverageProblems(env)...)
	ps = append(ps, ruleProblems(env)...)
	ps = append(ps, injectionProblems(env)...)
	return ps
}

// statusRetired is the status of an envelope that no longer describes a
// workflow in use.
const statusRetired = "RETIRED"

// Warnings returns what is allowed but worth a look in an envelope that
// lints clean: a RETIRED envelope no longer describes a workflow in use,
// an invariant no judge understands is not assessed (a coverage gap), and
// an invariant asking for an approver other than the envelope's
// human_acceptance_authority breaches on every approval.
func Warnings(env Envelope) []Problem {
	var ps []Problem
	if env.Status == statusRetired {
		ps = append(ps, Problem{"status", "the envelope is RETIRED: it no longer describes a workflow in use; assess the current envelope, or run with --allow-retired to assess this one anyway"})
	}
	ps = append(ps, unassessedWarnings(env)...)
	return append(ps, roleWarnings(env)...)
}

func uniqueIDs(env Envelope) []Problem {
	var ps []Problem
	dup := func(field, id string, seen map[string]int, i int) {
		if j, ok := seen[id]; ok {
			ps = append(ps, Problem{fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("id %q repeats %s[%d]: give each entry its own id", id, field, j)})
			return
		}
		seen[id] = i
	}
	tools, invs, injs := map[string]int{}, map[string]int{}, map[string]int{}
	for i, t := range env.Tools {
		dup("tools", t.ToolID, tools, i)
	}
	for i, v := range env.Invariants {
		dup("safety_invariants", v.InvariantID, invs, i)
	}
	for i, x := range env.Injections {
		dup("failure_injections", x.InjectionID, injs, i)
	}
	return ps
}

func tierProblems(env Envelope) []Problem {
	var ps []Problem
	tier := env.Target.AutonomyTier
	for i, t := range env.Tools {
		field := fmt.Sprintf("tools[%d] (%s)", i, t.ToolID)
		switch {
		case tier == "ADVISORY_ONLY" && t.Access == "WRITE":
			ps = append(ps, Problem{field, "a WRITE tool under autonomy_tier ADVISORY_ONLY: make it READ, remove it, or raise the tier"})
		case tier == "PROPOSES_ACTIONS" && t.Access == "WRITE" && t.Approval != "HUMAN_CONFIRMATION":
			ps = append(ps, Problem{field, "a WRITE tool under PROPOSES_ACTIONS needs approval HUMAN_CONFIRMATION"})
		case tier == "EXECUTES_REVERSIBLE_ACTIONS" && t.Effect == "CONSEQUENTIAL" && t.Approval != "HUMAN_CONFIRMATION":
			ps = append(ps, Problem{field, "a CONSEQUENTIAL tool under EXECUTES_REVERSIBLE_ACTIONS needs approval HUMAN_CONFIRMATION"})
		}
		if t.Scope == "trace" {
			ps = append(ps, Problem{field + ".resource_scope", `"trace" names no argument the gateway can bind: write "trace:/<argument>", e.g. "trace:/patient_id"`})
		}
		if t.Access == "READ" && t.Effect != "NONE" {
			ps = append(ps, Problem{field, fmt.Sprintf("a READ tool cannot have effect %s: make it WRITE or set effect NONE", t.Effect)})
		}
	}
	return ps
}

func coverageProblems(env Envelope) []Problem {
	have := map[string]bool{}
	for _, v := range env.Invariants {
		have[v.Category] = true
	}
	var missing []string
	seen := map[string]bool{}
	for _, x := range env.Injections {
		need := judgedBy(x.Category)
		if !have[need] && !seen[x.Category] {
			missing = append(missing, x.Category)
			seen[x.Category] = true
		}
	}
	sort.Strings(missing)
	var ps []Problem
	for _, cat := range missing {
		ps = append(ps, Problem{"safety_invariants", fmt.Sprintf("no %s invariant judges the %s injections: add one", judgedBy(cat), cat)})
	}
	return ps
}
