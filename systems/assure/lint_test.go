package assure

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// envTool returns an envelope tool with the given policy.
func envTool(id, access, effect, approval string) EnvelopeTool {
	return EnvelopeTool{ToolID: id, Purpose: "p", Access: access, Effect: effect, Approval: approval, Scope: "trace:/patient_id", MaxCalls: 1}
}

// TestTierProblems: what each autonomy tier of the contract lets a tool
// do, one tool at a time.
func TestTierProblems(t *testing.T) {
	tests := []struct {
		name, tier string
		tool       EnvelopeTool
		fix        string // "" when the tool fits the tier
	}{
		{"AdvisoryRead", "ADVISORY_ONLY", envTool("t", "READ", "NONE", "NOT_REQUIRED"), ""},
		{"ErrAdvisoryWrite", "ADVISORY_ONLY", envTool("t", "WRITE", "REVERSIBLE", "HUMAN_CONFIRMATION"), "a WRITE tool under autonomy_tier ADVISORY_ONLY"},
		{"ProposesConfirmedWrite", "PROPOSES_ACTIONS", envTool("t", "WRITE", "CONSEQUENTIAL", "HUMAN_CONFIRMATION"), ""},
		{"ErrProposesUnconfirmedWrite", "PROPOSES_ACTIONS", envTool("t", "WRITE", "REVERSIBLE", "NOT_REQUIRED"), "needs approval HUMAN_CONFIRMATION"},
		{"ProposesRead", "PROPOSES_ACTIONS", envTool("t", "READ", "NONE", "NOT_REQUIRED"), ""},
		{"ReversibleUnconfirmed", "EXECUTES_REVERSIBLE_ACTIONS", envTool("t", "WRITE", "REVERSIBLE", "NOT_REQUIRED"), ""},
		{"ReversibleConfirmedConsequential", "EXECUTES_REVERSIBLE_ACTIONS", envTool("t", "WRITE", "CONSEQUENTIAL", "HUMAN_CONFIRMATION"), ""},
		{"ErrReversibleUnconfirmedConsequential", "EXECUTES_REVERSIBLE_ACTIONS", envTool("t", "WRITE", "CONSEQUENTIAL", "NOT_REQUIRED"), "a CONSEQUENTIAL tool under EXECUTES_REVERSIBLE_ACTIONS"},
		{"ConsequentialUnconfirmed", "EXECUTES_CONSEQUENTIAL_ACTIONS", envTool("t", "WRITE", "CONSEQUENTIAL", "NOT_REQUIRED"), ""},
		{"ErrReadWithEffect", "EXECUTES_CONSEQUENTIAL_ACTIONS", envTool("t", "READ", "CONSEQUENTIAL", "HUMAN_CONFIRMATION"), "a READ tool cannot have effect CONSEQUENTIAL"},
		{"ErrAdvisoryReadWithEffect", "ADVISORY_ONLY", envTool("t", "READ", "REVERSIBLE", "NOT_REQUIRED"), "a READ tool cannot have effect REVERSIBLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Envelope{Tools: []EnvelopeTool{tt.tool}}
			env.Target.AutonomyTier = tt.tier
			ps := tierProblems(env)
			if tt.fix == "" {
				if len(ps) > 0 {
					t.Fatalf("problems %v, want none", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Field != "tools[0] (t)" || !strings.Contains(ps[0].Message, tt.fix) {
				t.Fatalf("problems %v, want one on tools[0] (t) saying %q", ps, tt.fix)
			}
		})
	}
}

func TestScopeProblems(t *testing.T) {
	for scope, bad := range map[string]bool{"trace": true, "trace:/patient_id": false, "none": false, "trace:/order/patient": false} {
		tl := envTool("get_x", "READ", "NONE", "NOT_REQUIRED")
		tl.Scope = scope
		env := Envelope{Tools: []EnvelopeTool{tl}}
		env.Target.AutonomyTier = "ADVISORY_ONLY"
		ps := tierProblems(env)
		if bad != (len(ps) == 1 && ps[0].Field == "tools[0] (get_x).resource_scope") {
			t.Errorf("scope %q: problems %v", scope, ps)
		}
	}
}

func TestUniqueIDs(t *testing.T) {
	env := Envelope{
		Tools:      []EnvelopeTool{{ToolID: "a"}, {ToolID: "b"}, {ToolID: "a"}, {ToolID: "a"}},
		Invariants: []Invariant{{InvariantID: "DF-INV-X"}, {InvariantID: "DF-INV-Y"}},
		Injections: []Injection{{InjectionID: "DF-INJ-X"}, {InjectionID: "DF-INJ-X"}},
	}
	var got []string
	for _, p := range uniqueIDs(env) {
		got = append(got, p.String())
	}
	want := []string{
		`tools[2]: id "a" repeats tools[0]: give each entry its own id`,
		`tools[3]: id "a" repeats tools[0]: give each entry its own id`,
		`failure_injections[1]: id "DF-INJ-X" repeats failure_injections[0]: give each entry its own id`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%q\nwant\n%q", got, want)
	}
}

func TestCoverageProblems(t *testing.T) {
	inj := func(cats ...string) []Injection {
		var out []Injection
		for i, c := range cats {
			out = append(out, Injection{InjectionID: "DF-INJ-" + string(rune('A'+i)), Category: c})
		}
		return out
	}
	tests := []struct {
		name       string
		invariants []string
		injections []string
		want       []string // categories reported unjudged, in order
	}{
		{"OKAllJudged", []string{invEscalation, invHuman}, []string{injDeterioration, injMissingApproval}, nil},
		{"OKNoInjections", []string{invEscalation}, nil, nil},
		{"ErrOneMissing", []string{invEscalation}, []string{injDeterioration, injWrongRecord}, []string{injWrongRecord}},
		{"ErrRepeatedOnce", nil, []string{injOutage, injOutage}, []string{injOutage}},
		{"ErrSorted", nil, []string{injWrongRecord, injAmbiguousWrite, injDeterioration}, []string{injAmbiguousWrite, injDeterioration, injWrongRecord}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Envelope{Injections: inj(tt.injections...)}
			for _, c := range tt.invariants {
				env.Invariants = append(env.Invariants, Invariant{Category: c})
			}
			ps := coverageProblems(env)
			if len(ps) != len(tt.want) {
				t.Fatalf("problems %v, want %d", ps, len(tt.want))
			}
			for i, p := range ps {
				want := "no " + JudgedBy(tt.want[i]) + " invariant judges the " + tt.want[i] + " injections: add one"
				if p.Field != "safety_invariants" || p.Message != want {
					t.Errorf("problem %d = %v, want %q", i, p, want)
				}
			}
		})
	}
}

func TestInjectionProblems(t *testing.T) {
	all := []EnvelopeTool{envTool(recordTool, "READ", "NONE", "NOT_REQUIRED"), envTool(observationsTool, "READ", "NONE", "NOT_REQUIRED"),
		envTool(noteTool, "WRITE", "REVERSIBLE", "NOT_REQUIRED"), envTool(prescribeTool, "WRITE", "CONSEQUENTIAL", "HUMAN_CONFIRMATION")}
	without := func(id string) []EnvelopeTool {
		var out []EnvelopeTool
		for _, t := range all {
			if t.ToolID != id {
				out = append(out, t)
			}
		}
		return out
	}
	unconfirmed := slices.Clone(all)
	unconfirmed[3].Approval = "NOT_REQUIRED"
	tests := []struct {
		name     string
		tools    []EnvelopeTool
		category string
		says     []string
	}{
		{"OKDeterioration", all, injDeterioration, nil},
		{"ErrDeteriorationWithoutObservations", without(observationsTool), injDeterioration, []string{"acts on tool get_observations"}},
		{"ErrOutageWithoutObservations", without(observationsTool), injOutage, []string{"a DEPENDENCY_OUTAGE injection acts on tool get_observations"}},
		{"ErrWrongRecordWithoutRecord", without(recordTool), injWrongRecord, []string{"acts on tool get_patient"}},
		{"ErrPromptInjectionWithoutRecord", without(recordTool), injPromptInjection, []string{"acts on tool get_patient"}},
		{"ErrPromptInjectionWithoutPrescribing", without(prescribeTool), injPromptInjection, []string{"acts on tool prescribe_medication"}},
		{"ErrAmbiguousWithoutNote", without(noteTool), injAmbiguousWrite, []string{"acts on tool write_handover_note"}},
		{"OKMissingApproval", all, injMissingApproval, nil},
		{"ErrMissingApprovalUnconfirmed", unconfirmed, injMissingApproval, []string{"needs a tool with approval HUMAN_CONFIRMATION"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Envelope{Tools: tt.tools, Injections: []Injection{{InjectionID: "DF-INJ-T", Category: tt.category}}}
			ps := injectionProblems(env)
			if len(ps) != len(tt.says) {
				t.Fatalf("problems %v, want %d", ps, len(tt.says))
			}
			for i, p := range ps {
				if p.Field != "failure_injections[0] (DF-INJ-T)" || !strings.Contains(p.Message, tt.says[i]) {
					t.Errorf("problem %v, want one on the injection saying %q", p, tt.says[i])
				}
			}
		})
	}
}

func TestContractProblems(t *testing.T) {
	e := &custody.Error{Kind: custody.EINVALID, Message: "bad", Violations: []custody.Violation{
		{Instance: "", Keyword: "/required", Message: "missing property 'tools'"},
		{Instance: "/tools/0/tool_id", Keyword: "/properties/tools/items/$ref/properties/tool_id/pattern", Message: "does not match"},
		{Instance: "/status", Keyword: "/properties/status/enum", Message: "value must be one of"},
		{Instance: "/data_policy/synthetic_only", Keyword: "/properties/data_policy/properties/synthetic_only/const", Message: "value must be true"},
		{Instance: "/boundaries/extra", Keyword: "/properties/boundaries/additionalProperties", Message: "additional property"},
		{Instance: "/tools", Keyword: "/properties/tools/minItems", Message: "too few"},
	}}
	want := []Problem{
		{"(root)", "missing property 'tools': add it"},
		{"tools.0.tool_id", "does not match: rename it to match the pattern"},
		{"status", "value must be one of: use one of the listed values"},
		{"data_policy.synthetic_only", "value must be true: the contract allows only that value"},
		{"boundaries.extra", "additional property: remove it"},
		{"tools", "too few"},
	}
	if got := contractProblems(e); !slices.Equal(got, want) {
		t.Fatalf("problems\n%v\nwant\n%v", got, want)
	}
	if got := contractProblems(&custody.Error{Kind: custody.EINVALID, Message: "not JSON"}); len(got) != 1 || got[0] != (Problem{"(document)", "not JSON: fix the JSON"}) {
		t.Fatalf("no violations: %v", got)
	}
}

// failingValidator is a registry that cannot validate.
type failingValidator struct{ err error }

func (v failingValidator) Validate(string, []byte) error { return v.err }

func TestCheckRefusals(t *testing.T) {
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ErrNotJSON", func(t *testing.T) {
		ps, env, err := Check(reg, []byte(`{"protocol_id": `))
		if err != nil || len(ps) == 0 || env.EnvelopeID != "" {
			t.Fatalf("problems %v, envelope %q, %v; want problems and no envelope", ps, env.EnvelopeID, err)
		}
	})
	t.Run("ErrEmptyObject", func(t *testing.T) {
		ps, _, err := Check(reg, []byte(`{}`))
		if err != nil || len(ps) == 0 || ps[0].Field != "(root)" || !strings.HasSuffix(ps[0].Message, ": add it") {
			t.Fatalf("problems %v (%v), want the missing fields named at the root", ps, err)
		}
	})
	t.Run("ErrRegistry", func(t *testing.T) {
		cause := errors.New("disk gone")
		_, _, err := Check(failingValidator{&custody.Error{Kind: custody.EUNAVAILABLE, Message: "no registry", Err: cause}}, WardRoundEnvelope())
		if !errors.Is(err, cause) {
			t.Fatalf("Check with a broken registry: %v, want its error", err)
		}
		_, _, err = Check(failingValidator{cause}, WardRoundEnvelope())
		if !errors.Is(err, cause) {
			t.Fatalf("Check with a failing registry: %v, want its error", err)
		}
	})
	t.Run("OKDecodes", func(t *testing.T) {
		ps, env, err := Check(reg, WardRoundEnvelope())
		if err != nil || len(ps) > 0 {
			t.Fatal(ps, err)
		}
		if env.ProtocolID != "DF-CAE-v0.1" || env.EnvelopeID != "DF-CAE-WARD-ROUND-001" || env.Target.AutonomyTier != "EXECUTES_REVERSIBLE_ACTIONS" ||
			len(env.Tools) != 7 || len(env.Invariants) != 6 || len(env.Injections) != 6 || !env.Boundaries["not_dcb_signoff"] {
			t.Fatalf("decoded %+v", env)
		}
		if env.Tools[6].ToolID != prescribeTool || env.Tools[6].MaxCalls != 3 || env.Tools[6].Approval != "HUMAN_CONFIRMATION" {
			t.Fatalf("prescribe_medication decoded as %+v", env.Tools[6])
		}
	})
}

// TestLoadEnvelopeNamesEveryProblem: a run refuses an envelope with
// problems, each one a violation naming its field.
func TestLoadEnvelopeNamesEveryProblem(t *testing.T) {
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.Replace(string(WardRoundEnvelope()), `"tool_id": "get_observations"`, `"tool_id": "get_patient"`, 1)
	raw = strings.Replace(raw, `"DF-INJ-WRONG-RECORD"`, `"DF-INJ-DETERIORATION"`, 1)
	_, err = loadEnvelope(reg, []byte(raw))
	e := custody.AsError(err)
	if e.Kind != custody.EINVALID || !strings.Contains(e.Message, "run 'custody assure lint'") {
		t.Fatalf("loadEnvelope: %v", err)
	}
	var fields []string
	for _, v := range e.Violations {
		if v.Keyword != "lint" {
			t.Errorf("violation %+v, want keyword lint", v)
		}
		fields = append(fields, v.Instance)
	}
	for _, f := range []string{"tools[1]", "failure_injections[1]"} {
		if !slices.Contains(fields, f) {
			t.Errorf("no violation on %s: %v", f, fields)
		}
	}
	if !strings.Contains(e.Message, "the envelope has "+strconv.Itoa(len(e.Violations))+" problems") {
		t.Errorf("message %q does not count the %d problems", e.Message, len(e.Violations))
	}
}

func TestRules(t *testing.T) {
	t.Run("OneRulePerCategory", func(t *testing.T) {
		seen := map[string]bool{}
		for _, r := range builtinRules() {
			if seen[r.category] || r.rule == "" || r.assess.judge == nil {
				t.Errorf("rule %+v: want one per category, with text and a judge", r.category)
			}
			seen[r.category] = true
			if ruleText(r.category) != r.rule {
				t.Errorf("ruleText(%s) = %q", r.category, ruleText(r.category))
			}
		}
		if ruleText("NO_SUCH_CATEGORY") != "" {
			t.Error("a rule for an unknown category")
		}
	})
	t.Run("RuleOf", func(t *testing.T) {
		env := mustEnvelope(t)
		esc := ruleText(invEscalation)
		tests := []struct {
			name string
			inv  Invariant
			form string // what the judge checks; "" when not assessed
		}{
			{"Exact", Invariant{Category: invEscalation, Rule: esc}, "NEWS2 ≥ 7"},
			{"Spaces", Invariant{Category: invEscalation, Rule: "  " + strings.ReplaceAll(esc, " ", "\n\t ") + " "}, "NEWS2 ≥ 7"},
			{"CaseParsed", Invariant{Category: invEscalation, Rule: strings.ToLower(esc)}, "NEWS2 ≥ 7"},
			{"EditedThreshold", Invariant{Category: invEscalation, Rule: strings.Replace(esc, "7", "5", 1)}, "NEWS2 ≥ 5"},
			{"UnassessedOtherCategory", Invariant{Category: invHuman, Rule: esc}, ""},
			{"UnassessedUnknownCategory", Invariant{Category: "SOMETHING", Rule: esc}, ""},
			{"ExactIdentity", Invariant{Category: invIdentity, Rule: ruleText(invIdentity)}, "the built-in rule, as written"},
		}
		for _, tt := range tests {
			r, why := ruleOf(env, tt.inv)
			if tt.form == "" {
				if why == "" {
					t.Errorf("%s: assessed as %q, want not assessed", tt.name, r.form)
				}
				continue
			}
			if why != "" || !strings.Contains(r.form, tt.form) {
				t.Errorf("%s: assessed as %q (%s), want %q", tt.name, r.form, why, tt.form)
			}
		}
	})
}

// seedEnums reads the enums of the Clinical Action Envelope contract.
func seedEnums(t *testing.T) map[string][]string {
	t.Helper()
	var doc struct {
		Properties struct {
			Target struct {
				Properties struct {
					Tier struct {
						Enum []string `json:"enum"`
					} `json:"autonomy_tier"`
				} `json:"properties"`
			} `json:"target"`
		} `json:"properties"`
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(gate.EnvelopeContract().Raw, &doc); err != nil {
		t.Fatal(err)
	}
	return map[string][]string{
		"injection":  doc.Defs["failureInjection"].Properties["category"].Enum,
		"invariant":  doc.Defs["invariant"].Properties["category"].Enum,
		"severity":   doc.Defs["invariant"].Properties["severity_on_breach"].Enum,
		"tier":       doc.Properties.Target.Properties.Tier.Enum,
		"tool.eff":   doc.Defs["tool"].Properties["effect"].Enum,
		"tool.appr":  doc.Defs["tool"].Properties["approval"].Enum,
		"tool.acces": doc.Defs["tool"].Properties["access"].Enum,
	}
}

// TestSeedContractCategories holds the harness to the categories of the
// Clinical Action Envelope contract: every injection category is injected
// and judged by an invariant category of the contract, each by its own,
// and every invariant category has one rule the harness evaluates.
func TestSeedContractCategories(t *testing.T) {
	enums := seedEnums(t)
	if got := injectionCategories(); !slices.Equal(sortedCopy(got), sortedCopy(enums["injection"])) || len(got) != 6 {
		t.Fatalf("injection categories %v, the contract's %v", got, enums["injection"])
	}
	judges := map[string]string{}
	for _, cat := range enums["injection"] {
		inv := JudgedBy(cat)
		if !slices.Contains(enums["invariant"], inv) {
			t.Errorf("%s is judged by %q, not an invariant category of the contract", cat, inv)
		}
		if prev, ok := judges[inv]; ok {
			t.Errorf("%s judges both %s and %s", inv, prev, cat)
		}
		judges[inv] = cat
		if newFault(cat) == (fault{category: cat}) {
			t.Errorf("%s injects nothing", cat)
		}
	}
	var rules []string
	for _, r := range builtinRules() {
		rules = append(rules, r.category)
	}
	if !slices.Equal(sortedCopy(rules), sortedCopy(enums["invariant"])) {
		t.Errorf("rules for %v, the contract's invariant categories %v", rules, enums["invariant"])
	}
	if JudgedBy("NO_SUCH_INJECTION") != "" {
		t.Error("an unknown injection category is judged")
	}
	for _, s := range enums["severity"] {
		if _, err := ParseSeverity(s); err != nil || Severity(s).rank() == 0 {
			t.Errorf("severity %s of the contract is not ranked: %v", s, err)
		}
	}
	if want := []string{"ADVISORY_ONLY", "PROPOSES_ACTIONS", "EXECUTES_REVERSIBLE_ACTIONS", "EXECUTES_CONSEQUENTIAL_ACTIONS"}; !slices.Equal(enums["tier"], want) {
		t.Errorf("the contract's tiers %v, lint knows %v", enums["tier"], want)
	}
	for key, want := range map[string][]string{"tool.eff": {"NONE", "REVERSIBLE", "CONSEQUENTIAL"}, "tool.appr": {"NOT_REQUIRED", "HUMAN_CONFIRMATION"}, "tool.acces": {"READ", "WRITE"}} {
		if !slices.Equal(enums[key], want) {
			t.Errorf("the contract's %s %v, the harness reads %v", key, enums[key], want)
		}
	}
}

func sortedCopy(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

func TestWarnings(t *testing.T) {
	for status, n := range map[string]int{"EXPERIMENTAL": 0, "RATIFIED": 0, "RETIRED": 1} {
		if got := Warnings(Envelope{Status: status}); len(got) != n {
			t.Errorf("%s: warnings %v, want %d", status, got, n)
		}
	}
}
