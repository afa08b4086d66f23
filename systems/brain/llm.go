package brain

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
)

// maxComposedBody caps a suggestion body a model writes.
const maxComposedBody = 600

// Composer is an Answerer that lets a chat model word the deterministic
// answer. The model is a composer, never a classifier: deterministic
// decides every suggestion, its confidence and its proposed edges; the
// model only rewrites each body, from the deterministic text alone (never
// the packet). A body that fails the check keeps the deterministic
// wording, and the breach is logged.
type Composer struct {
	Backend llm.Backend
	// Logger receives breaches; slog.Default when nil.
	Logger *slog.Logger
}

// Answer implements Answerer.
func (c Composer) Answer(ctx context.Context, job string, packet json.RawMessage) (json.RawMessage, error) {
	raw, err := deterministic{}.Answer(ctx, job, packet)
	if err != nil || llm.IsTemplate(c.Backend) {
		return raw, err
	}
	var resp Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("decode deterministic %s answer: %w", job, err)
	}
	for i := range resp.Suggestions {
		s := &resp.Suggestions[i]
		out := llm.Compose(ctx, c.Backend, composePrompt(job, *s), s.Body, checkComposed(*s))
		if out.Breach != nil {
			c.logger().Warn("brain composer breach: deterministic wording kept", "job", job, "suggestion", i, "breach", out.Breach)
		}
		s.Body = out.Text
	}
	return json.Marshal(resp)
}

func (c Composer) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

func composePrompt(job string, s Suggestion) llm.Prompt {
	return llm.Prompt{
		System: "You reword advice for a founder's knowledge graph. Keep every node id exactly as written. " +
			"Do not add facts, numbers or ids. Answer with one short paragraph of plain text, no lists, no JSON.",
		User:      fmt.Sprintf("Job: %s\nAdvice: %s\nWhy: %s\nRewrite the 'why' in at most two sentences.", job, s.Summary, s.Body),
		MaxTokens: 200,
	}
}

// checkComposed accepts a model's body only when it is short, plain text
// and names no node id the deterministic suggestion did not.
func checkComposed(s Suggestion) func(string) error {
	known := s.Summary + " " + s.Body
	return func(text string) error {
		switch {
		case utf8.RuneCountInString(text) > maxComposedBody:
			return custody.Errorf(custody.EINVALID, "composed body longer than %d characters", maxComposedBody)
		case strings.ContainsAny(text, "{}\n"):
			return custody.Errorf(custody.EINVALID, "composed body is not one plain paragraph")
		}
		for _, w := range strings.Fields(text) {
			w = strings.Trim(w, ".,;:()'\"")
			if looksLikeID(w) && !strings.Contains(known, w) {
				return custody.Errorf(custody.EINVALID, "composed body names %q, which the advice does not", w)
			}
		}
		return nil
	}
}

// looksLikeID reports whether a word is shaped like a node id (it holds a
// hyphen, colon or underscore between id characters).
func looksLikeID(w string) bool {
	return idPattern.MatchString(w) && strings.ContainsAny(w, "-:_") && !strings.HasPrefix(w, "-")
}
