package mesh

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/guard"
)

// The mesh's discipline checks keep composed texts (advisories,
// aggregations, broadcasts) from contradicting the deterministic state they
// word. They are the seed's own rules, built on package guard's generic
// checks; tiers are passed as their tier_enum strings.

// meshTierWords are the tier_enum values, lowest first.
var meshTierWords = [...]string{"info", "warning", "critical", "emergency"}

// meshHazardStems are the word stems that claim a fire hazard is present.
// At info, a text may not use them at all: the check does not try to read
// negation, so "no fire" is refused too and the template is used instead.
var meshHazardStems = [...]string{
	"fire", "wildfire", "bushfire", "smok", "flame", "flaming", "ignit",
	"evacu", "blaz", "ember", "burn", "scorch", "smold", "smould", "inferno",
}

// meshClaimStems are the stems of claims a broadcast may repeat from its
// aggregation but never introduce: hazards, orders and conditions.
var meshClaimStems = [...]string{
	"fire", "wildfire", "bushfire", "smok", "flame", "flaming", "ignit",
	"evacu", "blaz", "ember", "burn", "scorch", "smold", "smould", "inferno",
	"shelter", "clos", "order", "spread", "spot", "perimeter", "red", "flag",
	"wind", "gust", "humid", "dry", "contain", "injur", "casualt", "dead",
	"death", "fatal", "structur", "home", "destroy", "threat", "stale",
	"hot", "thermal", "active", "imminent", "immediate", "leave", "flee",
}

var (
	meshNodeRE     = regexp.MustCompile(`forward-[A-Za-z0-9-]*[A-Za-z0-9]`)
	meshCitationRE = regexp.MustCompile(`(forward-[A-Za-z0-9-]*[A-Za-z0-9])\s*\(([^)]*)\)`)
	meshWordRE     = regexp.MustCompile(`[a-z]+`)
	meshNumberRE   = regexp.MustCompile(`[0-9]+(?:[.,][0-9]+)?`)
)

// advisoryGuard returns the check of a forward advisory's text against its detector
// tier: the text names its tier, names no higher tier, and at info
// mentions no fire, smoke, flames, ignition or evacuation (the R4
// discipline test). It returns nil or an EINVALID *custody.Error.
func advisoryGuard(tier string) guard.Check {
	return func(text string) error { return meshAdvisory(tier, text) }
}

func meshAdvisory(tier, text string) error {
	rank := meshTierRank(tier)
	if rank < 0 {
		return meshBreach("advisory", "unknown tier %q", tier)
	}
	var sc meshAdvisoryScan
	sc.scan(text, rank == 0)
	if sc.tiers&(1<<rank) == 0 {
		return meshBreach("advisory", "text does not state its tier %q", tier)
	}
	for i := rank + 1; i < len(meshTierWords); i++ {
		if sc.tiers&(1<<i) != 0 {
			return meshBreach("advisory", "text names tier %q above the detector tier %q", meshTierWords[i], tier)
		}
	}
	if rank == 0 && sc.hazard != "" {
		return meshBreach("advisory", "info advisory mentions %q", sc.hazard)
	}
	return nil
}

// aggregationGuard returns the check of an aggregation's text against its inputs:
// reported maps each input node to the tier it reported. The text must
// cite at least one node as "node-id (tier ...)", may name no node outside
// the inputs, may cite a node only with the tier it reported, may name no
// tier above the highest reported, and when every node reported info it
// may mention no hazard. severity must not exceed the highest reported
// tier. It returns nil or an EINVALID *custody.Error.
func aggregationGuard(reported map[string]string, severity string) guard.Check {
	return func(text string) error { return meshAggregation(text, reported, severity) }
}

func meshAggregation(text string, reported map[string]string, severity string) error {
	top := -1
	for node, t := range reported {
		r := meshTierRank(t)
		if r < 0 {
			return meshBreach("aggregation", "node %s reported unknown tier %q", node, t)
		}
		top = max(top, r)
	}
	if top < 0 {
		return meshBreach("aggregation", "no input nodes")
	}
	if r := meshTierRank(severity); r < 0 || r > top {
		return meshBreach("aggregation", "severity %q exceeds every input tier", severity)
	}
	if err := meshCheckNodes(text, reported); err != nil {
		return err
	}
	if err := meshCheckCitations(text, reported); err != nil {
		return err
	}
	words := meshWords(meshNodeRE.ReplaceAllString(text, " "))
	if w := meshHigherTier(words, top); w != "" {
		return meshBreach("aggregation", "text names tier %q that no node reported", w)
	}
	if top == 0 {
		if w := meshStemIn(words, meshHazardStems[:]); w != "" {
			return meshBreach("aggregation", "all inputs are info but the text mentions %q", w)
		}
	}
	return nil
}

// broadcastGuard returns the check of the text an operator approved for broadcast against
// the aggregation it came from: it may shorten and soften, but it may not
// introduce a node, a number, a tier word or a claim (a hazard, an order,
// a condition) that the aggregation text does not hold, and it names a
// tier above the broadcast tier only when citing what a node reported.
// operatorText holds the words the operator wrote themselves (see
// textEdit): a claim among them is the operator's and may be introduced,
// but a node, a number or a tier word may not, since those restate what
// the nodes measured. It returns nil or an EINVALID *custody.Error.
func broadcastGuard(aggregationText, operatorText, tier string) guard.Check {
	return func(text string) error { return meshBroadcast(text, aggregationText, operatorText, tier) }
}

func meshBroadcast(text, aggregationText, operatorText, tier string) error {
	if meshTierRank(tier) < 1 {
		return meshBreach("broadcast", "tier %q cannot be broadcast", tier)
	}
	if extra := meshMissing(meshNodeRE.FindAllString(text, -1), meshNodeRE.FindAllString(aggregationText, -1)); len(extra) > 0 {
		return meshBreach("broadcast", "text introduces nodes %s", strings.Join(extra, ", "))
	}
	plain, aggPlain := meshNodeRE.ReplaceAllString(text, " "), meshNodeRE.ReplaceAllString(aggregationText, " ")
	if extra := meshMissing(meshNumberRE.FindAllString(plain, -1), meshNumberRE.FindAllString(aggPlain, -1)); len(extra) > 0 {
		return meshBreach("broadcast", "text introduces numbers %s", strings.Join(extra, ", "))
	}
	words, aggWords := meshWords(plain), meshWords(aggPlain)
	for _, t := range meshTierWords {
		if words[t] && !aggWords[t] {
			return meshBreach("broadcast", "text introduces tier %q", t)
		}
	}
	uncited := meshWords(meshCitationRE.ReplaceAllString(text, " "))
	if w := meshHigherTier(uncited, meshTierRank(tier)); w != "" {
		return meshBreach("broadcast", "text states tier %q above the broadcast tier %q outside a node citation", w, tier)
	}
	return meshCheckClaims(words, aggWords, meshWords(meshNodeRE.ReplaceAllString(operatorText, " ")))
}

// meshCheckClaims refuses a claim word of a broadcast's words whose stem
// the aggregation's words do not hold, unless the operator wrote that
// word themselves. Words are checked in sorted order, so the refusal
// names the same word every time.
func meshCheckClaims(words, aggWords, operatorWords map[string]bool) error {
	sorted := make([]string, 0, len(words))
	for w := range words {
		sorted = append(sorted, w)
	}
	sort.Strings(sorted)
	for _, w := range sorted {
		if s := meshStem(w, meshClaimStems[:]); s != "" && !meshHasStem(aggWords, s) && !operatorWords[w] {
			return meshBreach("broadcast", "text introduces the claim %q, which neither the aggregation holds nor the operator wrote", w)
		}
	}
	return nil
}

// meshAdvisoryScan is what the advisory check needs of a text's words:
// the tier words it holds and, when hazards are looked for, the least
// (in byte order) of its words that starts with a hazard stem. The words
// are the lowercased runs of letters of its tokens, skipping node ids. It
// is the fast path of the advisory check, which runs on every advisory an
// aggregator receives: it keeps no set of words and allocates only to
// report a hazard word.
type meshAdvisoryScan struct {
	tiers  uint8 // bit i set: the text holds meshTierWords[i]
	hazard string
	// first has bit c-'a' set for each letter c that begins a tier word
	// or, when hazards are looked for, a hazard stem: no other word can
	// match either.
	first uint32
}

func (sc *meshAdvisoryScan) scan(text string, hazards bool) {
	for _, t := range meshTierWords {
		sc.first |= 1 << (t[0] - 'a')
	}
	if hazards {
		for _, s := range meshHazardStems {
			sc.first |= 1 << (s[0] - 'a')
		}
	}
	var buf [32]byte
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && meshTokenByte(text[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		if tok := text[i:j]; !strings.HasPrefix(tok, "forward-") {
			sc.letterRuns(tok, buf[:0], hazards)
		}
		i = j
	}
}

func meshTokenByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-'
}

// letterRuns visits the lowercased runs of letters of tok.
func (sc *meshAdvisoryScan) letterRuns(tok string, buf []byte, hazards bool) {
	for i := 0; i <= len(tok); i++ {
		if i < len(tok) && (tok[i]|0x20 >= 'a' && tok[i]|0x20 <= 'z') {
			buf = append(buf, tok[i]|0x20)
			continue
		}
		if len(buf) > 0 {
			sc.word(buf, hazards)
			buf = buf[:0]
		}
	}
}

func (sc *meshAdvisoryScan) word(w []byte, hazards bool) {
	if sc.first&(1<<(w[0]-'a')) == 0 {
		return
	}
	for i, t := range meshTierWords {
		if string(w) == t {
			sc.tiers |= 1 << i
		}
	}
	if !hazards || sc.hazard != "" && string(w) >= sc.hazard {
		return
	}
	for _, s := range meshHazardStems {
		if len(w) >= len(s) && string(w[:len(s)]) == s {
			sc.hazard = string(w)
			return
		}
	}
}

func meshCheckNodes(text string, reported map[string]string) error {
	for _, n := range meshNodeRE.FindAllString(text, -1) {
		if _, ok := reported[n]; !ok {
			return meshBreach("aggregation", "text names node %s that is not an input", n)
		}
	}
	return nil
}

func meshCheckCitations(text string, reported map[string]string) error {
	cites := meshCitationRE.FindAllStringSubmatch(text, -1)
	if len(cites) == 0 {
		return meshBreach("aggregation", "text cites no node")
	}
	for _, c := range cites {
		said := meshFirstTier(c[2])
		if said == "" {
			continue
		}
		if said != reported[c[1]] {
			return meshBreach("aggregation", "text cites %s as %q but it reported %q", c[1], said, reported[c[1]])
		}
	}
	return nil
}

func meshFirstTier(s string) string {
	for _, w := range meshWordRE.FindAllString(strings.ToLower(s), -1) {
		if meshTierRank(w) >= 0 {
			return w
		}
	}
	return ""
}

func meshTierRank(t string) int {
	for i, w := range meshTierWords {
		if w == t {
			return i
		}
	}
	return -1
}

func meshWords(text string) map[string]bool {
	out := make(map[string]bool)
	for _, w := range meshWordRE.FindAllString(strings.ToLower(text), -1) {
		out[w] = true
	}
	return out
}

func meshHigherTier(words map[string]bool, rank int) string {
	for i := rank + 1; i < len(meshTierWords); i++ {
		if words[meshTierWords[i]] {
			return meshTierWords[i]
		}
	}
	return ""
}

// meshStemIn returns the first word (in sorted order) that starts with one
// of stems, or "".
func meshStemIn(words map[string]bool, stems []string) string {
	sorted := make([]string, 0, len(words))
	for w := range words {
		sorted = append(sorted, w)
	}
	sort.Strings(sorted)
	for _, w := range sorted {
		if meshStem(w, stems) != "" {
			return w
		}
	}
	return ""
}

func meshStem(word string, stems []string) string {
	for _, s := range stems {
		if strings.HasPrefix(word, s) {
			return s
		}
	}
	return ""
}

func meshHasStem(words map[string]bool, stem string) bool {
	for w := range words {
		if strings.HasPrefix(w, stem) {
			return true
		}
	}
	return false
}

// meshMissing returns the items of got absent from allowed, sorted and
// without repeats.
func meshMissing(got, allowed []string) []string {
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	seen := make(map[string]bool)
	var out []string
	for _, g := range got {
		if !ok[g] && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

func meshBreach(what, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &custody.Error{
		Kind:       custody.EINVALID,
		Message:    "mesh " + what + " text refused: " + msg,
		Violations: []custody.Violation{{Keyword: "guard/mesh-" + what, Message: msg}},
	}
}
