package peas

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
)

// An in-car warning piggybacks on the approved sign update, so it may only
// restate the sign: every claim it makes (hazard, instruction, number,
// place, distance, time) must be one the sign's text states. Both texts are
// compared as claims, after normalising what a spoken rewording changes:
//
//   - case and punctuation ("SLOW DOWN NOW" and "Slow down now." are one
//     text; "PILE-UP" and "pile up" are the same two words);
//   - numbers, in digits or in words ("30", "thirty", "1,200" and "one
//     thousand two hundred" are each one value);
//   - contractions ("don't" is "do not").
//
// The warning may also say the fillers of restateFillers, which state
// nothing, and may drop a claim of the sign, but never a negation. A
// warning is refused when:
//
//   - a word or number of it is not on the sign (the claim it makes is new);
//   - a clause of it (the text between punctuation) says the sign's words
//     in another order than the sign does ("Stop. Do not slow down" under
//     "SLOW DOWN. DO NOT STOP");
//   - it has fewer negations than the sign ("Stop" under "DO NOT STOP").

// restateFillers are the words a warning may add to the sign's: articles,
// the copula, "and", "to", "of" and "please", which a spoken sentence
// needs and which state no hazard, place, number or instruction. Any other
// word, however neutral it sounds ("warning", "caution", "sign"), is a
// content word and must be on the sign.
var restateFillers = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "to": true, "of": true,
	"is": true, "are": true, "be": true, "please": true,
}

// negations are the words whose loss turns an instruction around.
var negations = map[string]bool{"not": true, "no": true, "never": true}

// contractions are spelled out before the texts are compared.
var contractions = map[string][]string{
	"dont": {"do", "not"}, "doesnt": {"does", "not"}, "cant": {"can", "not"}, "cannot": {"can", "not"},
	"wont": {"will", "not"}, "isnt": {"is", "not"}, "arent": {"are", "not"}, "its": {"it", "is"},
}

var (
	clauseRE = regexp.MustCompile(`[.!?,;:\n]+`)
	tokenRE  = regexp.MustCompile(`\d+(?:,\d{3})*(?:\.\d+)?|[a-z]+`)
)

// claim is one normalised word or number of a text and how it was written.
type claim struct {
	norm, said string
}

// claims returns the clauses of text, each as its normalised words and
// numbers, fillers left in.
func claims(text string) [][]claim {
	text = strings.NewReplacer("'", "", "’", "").Replace(strings.ToLower(text))
	var out [][]claim
	for _, clause := range clauseRE.Split(text, -1) {
		var cs []claim
		for _, tok := range tokenRE.FindAllString(clause, -1) {
			if full, ok := contractions[tok]; ok {
				cs = append(cs, claim{full[0], tok}, claim{full[1], ""})
				continue
			}
			if tok[0] >= '0' && tok[0] <= '9' {
				tok = normalDigits(tok)
			}
			cs = append(cs, claim{tok, tok})
		}
		if cs = numberWords(cs); len(cs) > 0 {
			out = append(out, cs)
		}
	}
	return out
}

// normalDigits writes a number in digits by value: "030", "30.0" and "30"
// alike, "1,200" as 1200.
func normalDigits(s string) string {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// restates refuses a warning that states what the sign does not; the
// error's violations name each claim not on the sign.
func restates(warning, sign string) error {
	var signSeq []string
	onSign := map[string]bool{}
	signNeg := 0
	for _, cl := range claims(sign) {
		for _, c := range cl {
			signSeq = append(signSeq, c.norm)
			onSign[c.norm] = true
			if negations[c.norm] {
				signNeg++
			}
		}
	}
	var vs []custody.Violation
	seen := map[string]bool{}
	refuse := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !seen[msg] {
			seen[msg] = true
			vs = append(vs, custody.Violation{Instance: "/warning_text", Keyword: "restates_sign", Message: msg})
		}
	}
	neg := 0
	for _, cl := range claims(warning) {
		var content []string
		var said []string
		for _, c := range cl {
			if c.said != "" {
				said = append(said, c.said)
			}
			if negations[c.norm] {
				neg++
			}
			if restateFillers[c.norm] {
				continue
			}
			if !onSign[c.norm] {
				refuse("%s is not on the sign", quoteClaim(c, cl))
				continue
			}
			content = append(content, c.norm)
		}
		if len(content) > 0 && !subsequence(content, signSeq) {
			refuse("%q is not on the sign: the sign says its words in another order", strings.Join(said, " "))
		}
	}
	if neg < signNeg {
		refuse("the sign's negation (%d of not, no, never) is missing: the warning says %d", signNeg, neg)
	}
	if len(vs) == 0 {
		return nil
	}
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.Message
	}
	return &custody.Error{Kind: custody.EINVALID, Violations: vs, Message: strings.Join(msgs, "; ")}
}

// quoteClaim names a claim as the warning wrote it, with its value when
// the warning spelled a number; the second word of a contraction is named
// by the contraction.
func quoteClaim(c claim, clause []claim) string {
	if c.said == "" {
		for i := 1; i < len(clause); i++ {
			if clause[i] == c {
				return strconv.Quote(clause[i-1].said)
			}
		}
	}
	if c.said != c.norm && c.norm[0] >= '0' && c.norm[0] <= '9' {
		return fmt.Sprintf("%q (%s)", c.said, c.norm)
	}
	return strconv.Quote(c.said)
}

// subsequence reports whether sub's words appear in seq in sub's order.
func subsequence(sub, seq []string) bool {
	i := 0
	for _, w := range seq {
		if i < len(sub) && sub[i] == w {
			i++
		}
	}
	return i == len(sub)
}

// Number words up to the thousands, as a spoken warning says them.
var (
	smallNumbers = map[string]int{
		"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
		"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
		"seventeen": 17, "eighteen": 18, "nineteen": 19,
	}
	tensNumbers = map[string]int{
		"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
	}
	scaleNumbers = map[string]int{"hundred": 100, "thousand": 1000}
)

// numberWords replaces each run of number words ("thirty five", "one
// hundred and five") by its value in digits, written as the run was.
func numberWords(cs []claim) []claim {
	out := cs[:0:0]
	for i := 0; i < len(cs); {
		n, end := readNumber(cs, i)
		if end == i {
			out = append(out, cs[i])
			i++
			continue
		}
		said := make([]string, 0, end-i)
		for _, c := range cs[i:end] {
			said = append(said, c.said)
		}
		out = append(out, claim{strconv.Itoa(n), strings.Join(said, " ")})
		i = end
	}
	return out
}

// readNumber reads the number words from cs[i]: their value and the index
// after them, i when cs[i] opens no number.
func readNumber(cs []claim, i int) (int, int) {
	total, cur, end := 0, 0, i
	for j := i; j < len(cs); j++ {
		w := cs[j].norm
		if v, ok := smallNumbers[w]; ok && (v < 10 && cur%10 == 0 || cur%100 == 0) {
			cur += v
		} else if v, ok := tensNumbers[w]; ok && cur%100 == 0 {
			cur += v
		} else if v, ok := scaleNumbers[w]; ok && j > i {
			if cur == 0 {
				cur = 1
			}
			if v == 1000 {
				total, cur = total+cur*v, 0
			} else {
				cur *= v
			}
		} else if w == "and" && j > i && j+1 < len(cs) && isNumberWord(cs[j+1].norm) && cur%100 == 0 && cur > 0 {
			continue
		} else {
			break
		}
		end = j + 1
	}
	return total + cur, end
}

func isNumberWord(w string) bool {
	_, small := smallNumbers[w]
	_, tens := tensNumbers[w]
	return small || tens
}
