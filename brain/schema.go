package brain

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
)

// sharedDefs lists the shared definitions of the packet contract: every
// $def that is not a job must be one of them.
func sharedDefs() []string {
	return []string{"ActiveContext", "BankedOpportunities", "BrainResponse", "ClaimProjection",
		"Constraints", "ContradictionProjection", "FocusNode", "FrameworkChainHint", "LocalGraphSummary",
		"Origin", "PrivacyMode", "RecentChangeProjection", "UnsupportedProjection"}
}

// CheckSchema verifies the packet contract itself and returns each problem
// found, or none: all twelve jobs have in and out with job.const equal to
// the job's name, every other $def is a shared definition, and every
// object schema with properties has additionalProperties false. A document
// that is not JSON is an EINVALID error.
func CheckSchema(doc []byte) ([]string, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, &custody.Error{Kind: custody.EINVALID, Message: "the contract is not a JSON object", Err: err}
	}
	defs, _ := root["$defs"].(map[string]any)
	if defs == nil {
		return []string{"no $defs"}, nil
	}
	var problems []string
	for _, job := range Jobs() {
		problems = append(problems, checkJob(defs, job)...)
	}
	for _, name := range sortedKeys(defs) {
		if !knownJob(name) && !slices.Contains(sharedDefs(), name) {
			problems = append(problems, fmt.Sprintf("$defs/%s: neither a job nor a shared definition", name))
		}
	}
	return append(problems, openObjects(root, "")...), nil
}

// checkJob checks one job's in and out.
func checkJob(defs map[string]any, job string) []string {
	def, ok := defs[job].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("$defs/%s: job missing", job)}
	}
	var problems []string
	for _, part := range []string{"in", "out"} {
		if _, ok := def[part].(map[string]any); !ok {
			problems = append(problems, fmt.Sprintf("$defs/%s/%s: missing", job, part))
		}
	}
	in, _ := def["in"].(map[string]any)
	props, _ := in["properties"].(map[string]any)
	jobProp, _ := props["job"].(map[string]any)
	if c, ok := jobProp["const"]; in != nil && (!ok || c != job) {
		problems = append(problems, fmt.Sprintf("$defs/%s/in/properties/job: const must be %q", job, job))
	}
	return problems
}

// openObjects returns a problem for every schema under v (at JSON pointer
// at) that has properties but not additionalProperties false.
func openObjects(v any, at string) []string {
	var problems []string
	switch x := v.(type) {
	case map[string]any:
		if _, has := x["properties"].(map[string]any); has && x["additionalProperties"] != false {
			problems = append(problems, fmt.Sprintf("%s: object with properties lacks additionalProperties: false", cmpPointer(at)))
		}
		for _, k := range sortedKeys(x) {
			problems = append(problems, openObjects(x[k], at+"/"+escapePointer(k))...)
		}
	case []any:
		for i, e := range x {
			problems = append(problems, openObjects(e, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return problems
}

func cmpPointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func escapePointer(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
