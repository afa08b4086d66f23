package mesh

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Composed is the outcome of composing one text.
type Composed struct {
	// Text is the text to use: the backend's when it passed the check,
	// else the template.
	Text string
	// Backend names what produced Text ("template" on fallback).
	Backend string
	// Breach is why the backend's text was refused, when it was.
	Breach error
}

// Composer words a deterministic decision. It never decides: the caller
// passes the template text it would use itself and the check every text
// must pass, and Compose returns the template whenever the backend's text
// fails the check or the backend fails.
type Composer interface {
	Compose(ctx context.Context, prompt, template string, check func(string) error) Composed
}

// template is the deterministic composer: it returns the template text.
type template struct{}

// Compose returns the template.
func (template) Compose(_ context.Context, _, template string, _ func(string) error) Composed {
	return Composed{Text: template, Backend: "template"}
}

// fitText reports an error unless text is between minChars and maxChars
// characters and its JSON string form takes at most budget bytes.
func fitText(text string, minChars, maxChars, budget int) error {
	n := utf8.RuneCountInString(text)
	if n < minChars || n > maxChars {
		return fmt.Errorf("text is %d characters, outside %d..%d", n, minChars, maxChars)
	}
	// strconv.Quote writes at most 4 bytes per byte of text (\xff), so a
	// text that short cannot need more than budget bytes.
	if 4*len(text) <= budget {
		return nil
	}
	if b := len(strconv.Quote(text)) - 2; b > budget {
		return fmt.Errorf("text needs %d bytes, %d left under the message limit", b, budget)
	}
	return nil
}

// firstFitting returns the first candidate that passes fit, or "".
func firstFitting(candidates []string, fit func(string) error) string {
	for _, c := range candidates {
		if fit(c) == nil {
			return c
		}
	}
	return ""
}
