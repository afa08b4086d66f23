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

// packetTextCap is the value-space cap of every summary and explanation a
// packet carries (the contract's review finding H5).
const packetTextCap = 120

// CheckSchema verifies the packet contract itself and returns each problem
// found, or none. It checks every discipline the contract's description
// names: all twelve jobs have in and out; each in pins job to the job's
// name, packet_version to 1.0 and privacy_mode to local_summary_only
// (const, not the enum), all three required; every other $def is a
// shared definition; every object schema with properties, and every one
// the shipped contract closes, has additionalProperties false; every
// summary or explanation a packet carries has maxLength at most 120; no
// maxLength or maxItems of the shipped contract is removed or raised; and
// no text field is added: a property the shipped contract lacks must be
// bounded (a number, integer, boolean, enum or string with maxLength at
// most 120), and a schema the shipped contract bounds must stay bounded,
// whatever $ref, allOf, anyOf or oneOf it goes through (see newText). A
// document that is not JSON is an EINVALID error.
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
	var shipped any
	if err := json.Unmarshal(contractJSON, &shipped); err != nil {
		return nil, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error",
			Err: fmt.Errorf("decode the shipped packet contract %s: %w", contractFile, err)}
	}
	problems = append(problems, openObjects(shipped, root, "")...)
	problems = append(problems, packetTextCaps(defs)...)
	// The shipped contract's caps may be tightened, never loosened.
	problems = append(problems, loosenedCaps(shipped, root, "")...)
	// Nor may a field that can carry text be added.
	return append(problems, newText(shipped, root)...), nil
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
	if in == nil {
		return problems
	}
	props, _ := in["properties"].(map[string]any)
	required, _ := in["required"].([]any)
	for _, pin := range []struct{ prop, value string }{{"job", job}, {"packet_version", packetVersion}, {"privacy_mode", localSummaryOnly}} {
		p, _ := props[pin.prop].(map[string]any)
		if c, ok := p["const"]; !ok || c != pin.value || len(p) != 1 {
			problems = append(problems, fmt.Sprintf("$defs/%s/in/properties/%s: const must be %q, and nothing else", job, pin.prop, pin.value))
		}
		if !slices.Contains(required, any(pin.prop)) {
			problems = append(problems, fmt.Sprintf("$defs/%s/in/required: must list %q", job, pin.prop))
		}
	}
	return problems
}

// packetTextCaps returns a problem for every summary or explanation
// property reachable from a job's in (through $refs) that lacks maxLength
// or allows more than packetTextCap characters.
func packetTextCaps(defs map[string]any) []string {
	var problems []string
	seen := map[string]bool{}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/$defs/") {
				name := strings.TrimPrefix(ref, "#/$defs/")
				if !seen[name] {
					seen[name] = true
					walk(defs[name], "/$defs/"+escapePointer(name))
				}
			}
			props, _ := x["properties"].(map[string]any)
			for _, name := range []string{"summary", "explanation"} {
				if p, ok := props[name].(map[string]any); ok && !capped(p["maxLength"], packetTextCap) {
					problems = append(problems, fmt.Sprintf("%s/properties/%s: maxLength must be at most %d", at, name, packetTextCap))
				}
			}
			for _, k := range sortedKeys(x) {
				walk(x[k], at+"/"+escapePointer(k))
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	for _, job := range Jobs() {
		def, _ := defs[job].(map[string]any)
		walk(def["in"], "/$defs/"+job+"/in")
	}
	return problems
}

// capped reports whether v is a number at most limit.
func capped(v any, limit float64) bool {
	n, ok := v.(float64)
	return ok && n <= limit
}

// loosenedCaps returns a problem for every maxLength or maxItems of the
// shipped schema (at JSON pointer at) that the checked schema drops or
// raises.
func loosenedCaps(shipped, checked any, at string) []string {
	var problems []string
	switch s := shipped.(type) {
	case map[string]any:
		c, _ := checked.(map[string]any)
		for _, kw := range loosened(s, c) {
			problems = append(problems, fmt.Sprintf("%s: %s must be at most %g, as shipped", cmpPointer(at), kw, s[kw]))
		}
		for _, k := range sortedKeys(s) {
			problems = append(problems, loosenedCaps(s[k], c[k], at+"/"+escapePointer(k))...)
		}
	case []any:
		c, _ := checked.([]any)
		for i, e := range s {
			var ce any
			if i < len(c) {
				ce = c[i]
			}
			problems = append(problems, loosenedCaps(e, ce, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return problems
}

// loosened returns the keywords among maxLength and maxItems that the
// shipped schema s caps and the checked schema c drops or raises.
func loosened(s, c map[string]any) []string {
	var kws []string
	for _, kw := range []string{"maxLength", "maxItems"} {
		if limit, ok := s[kw].(float64); ok && !capped(c[kw], limit) {
			kws = append(kws, kw)
		}
	}
	return kws
}

// openObjects returns a problem for every schema under v (at JSON pointer
// at) that lacks additionalProperties false while it has properties or
// while the shipped schema at the same place (under shipped) has it.
func openObjects(shipped, v any, at string) []string {
	var problems []string
	switch x := v.(type) {
	case map[string]any:
		s, _ := shipped.(map[string]any)
		_, has := x["properties"].(map[string]any)
		switch {
		case x["additionalProperties"] == false:
		case s["additionalProperties"] == false:
			problems = append(problems, fmt.Sprintf("%s: additionalProperties must be false, as shipped", cmpPointer(at)))
		case has:
			problems = append(problems, fmt.Sprintf("%s: object with properties lacks additionalProperties: false", cmpPointer(at)))
		}
		for _, k := range sortedKeys(x) {
			problems = append(problems, openObjects(s[k], x[k], at+"/"+escapePointer(k))...)
		}
	case []any:
		s, _ := shipped.([]any)
		for i, e := range x {
			var se any
			if i < len(s) {
				se = s[i]
			}
			problems = append(problems, openObjects(se, e, fmt.Sprintf("%s/%d", at, i))...)
		}
	case bool:
		if s, _ := shipped.(map[string]any); x && s["additionalProperties"] == false {
			problems = append(problems, fmt.Sprintf("%s: additionalProperties must be false, as shipped", cmpPointer(at)))
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
