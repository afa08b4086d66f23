// Package guard holds deterministic discipline checks on text a model
// composed: every number, name, field and topic it states must come from
// the facts it was given, required citations must be present, and length
// is bounded. A check never rewrites text; it refuses it, and the caller
// falls back to its deterministic template.
package guard

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/custody-dev/custody"
)

// Check is one discipline check. It returns nil when text passes, else an
// EINVALID *custody.Error whose violations name each offending part.
type Check func(text string) error

var (
	numberRE = regexp.MustCompile(`\d+(?:,\d{3})*(?:\.\d+)?`)
	wordRE   = regexp.MustCompile(`\p{L}[\p{L}'’-]*`)
	fieldRE  = regexp.MustCompile(`\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b`)
	nameRE   = regexp.MustCompile(`\p{Lu}\p{L}+`)
)

// violation is one failed rule, reported under keyword "guard/RULE".
func violation(rule, format string, args ...any) custody.Violation {
	return custody.Violation{Keyword: "guard/" + rule, Message: fmt.Sprintf(format, args...)}
}

// refuse wraps violations in an EINVALID error; nil when there are none.
func refuse(vs []custody.Violation) error {
	if len(vs) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(vs))
	for _, v := range vs {
		msgs = append(msgs, v.Message)
	}
	return &custody.Error{Kind: custody.EINVALID, Message: "text refused: " + strings.Join(msgs, "; "), Violations: vs}
}

// All runs every check and reports all their violations together.
func All(checks ...Check) Check {
	return func(text string) error {
		var vs []custody.Violation
		for _, c := range checks {
			err := c(text)
			if err == nil {
				continue
			}
			e := custody.AsError(err)
			if len(e.Violations) == 0 {
				vs = append(vs, violation("check", "%s", e.Message))
			}
			vs = append(vs, e.Violations...)
		}
		return refuse(vs)
	}
}

// Numbers returns the numbers written in digits in text, normalized so that
// "0.50", "0.5" and "1,200" compare by value ("0.5", "1200"), digit for
// digit however long. A minus sign that stands before a number (at the
// start, after a space or an opening bracket) is its sign: "-5" is not
// "5"; the hyphen of "I-94" or of a range "5-10" is not.
func Numbers(text string) []string {
	var out []string
	for _, at := range numberRE.FindAllStringIndex(text, -1) {
		n := normalizeNumber(text[at[0]:at[1]])
		if negative(text[:at[0]]) && n != "0" {
			n = "-" + n
		}
		out = append(out, n)
	}
	return out
}

// negative reports whether before, the text before a number, ends in a
// minus sign that is the number's own.
func negative(before string) bool {
	for _, minus := range []string{"-", "−"} {
		if rest, ok := strings.CutSuffix(before, minus); ok {
			return rest == "" || strings.ContainsAny(rest[len(rest)-1:], " \t\n([")
		}
	}
	return false
}

// normalizeNumber writes a number of digits, thousands commas and a
// fraction in its one form: no commas, no leading zeros, no trailing
// zeros in the fraction.
func normalizeNumber(s string) string {
	s = strings.ReplaceAll(s, ",", "")
	whole, frac, _ := strings.Cut(s, ".")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		return whole + "." + frac
	}
	return whole
}

// Words returns the words of text, lowercased.
func Words(text string) []string {
	ws := wordRE.FindAllString(text, -1)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return ws
}

// WordCount returns how many whitespace-separated words text holds.
func WordCount(text string) int { return len(strings.Fields(text)) }

// Fields returns the snake_case identifiers in text: field names.
func Fields(text string) []string { return fieldRE.FindAllString(text, -1) }

// Names returns the proper names of text, such as places: its capitalized
// words, except a common English word that is capitalized because it opens
// a sentence ("Traffic is slowing") — a name opening one ("Toledo saw
// worse") is still a name.
func Names(text string) []string {
	var out []string
	for _, loc := range nameRE.FindAllStringIndex(text, -1) {
		if r, _ := utf8.DecodeLastRuneInString(text[:loc[0]]); loc[0] > 0 && isWordRune(r) {
			continue // inside a token such as "MM88" or "iPhone"
		}
		word := text[loc[0]:loc[1]]
		if opensSentence(text[:loc[0]]) && isEnglishWord(word) {
			continue
		}
		out = append(out, word)
	}
	return out
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// opensSentence reports whether a word after prefix starts a sentence,
// a line or a list item.
func opensSentence(prefix string) bool {
	p := strings.TrimRight(prefix, " \t\"'(“*")
	if p == "" {
		return true
	}
	switch p[len(p)-1] {
	case '.', '!', '?', ':', '\n', '-':
		return true
	}
	return false
}

// MaxWords refuses text longer than n words.
func MaxWords(n int) Check {
	return func(text string) error {
		if c := WordCount(text); c > n {
			return refuse([]custody.Violation{violation("length", "%d words, at most %d allowed", c, n)})
		}
		return nil
	}
}

// MaxChars refuses text longer than n characters.
func MaxChars(n int) Check {
	return func(text string) error {
		if c := len([]rune(text)); c > n {
			return refuse([]custody.Violation{violation("length", "%d characters, at most %d allowed", c, n)})
		}
		return nil
	}
}

// RequireAny refuses text that holds none of phrases (case-insensitive).
// With no phrases it accepts everything.
func RequireAny(phrases ...string) Check {
	return func(text string) error {
		if len(phrases) == 0 {
			return nil
		}
		low := strings.ToLower(text)
		for _, p := range phrases {
			if strings.Contains(low, strings.ToLower(p)) {
				return nil
			}
		}
		return refuse([]custody.Violation{violation("citation", "required citation %q is missing", phrases[0])})
	}
}
