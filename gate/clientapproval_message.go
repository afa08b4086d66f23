package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/linediff"
)

// maxClientArguments bounds the arguments a client's user is shown, as
// indented JSON: a call whose arguments are longer is left to the
// operators, since the user must see the whole of what they approve.
const maxClientArguments = 32 << 10

// errTooLong says a held call's arguments are too long to show a client.
var errTooLong = errors.New("the arguments are too long to show in the client: an operator decides")

// clientMessage is what the user of an MCP client reads to decide a: the
// tool, the agent, the exact arguments and, for an edit, its diff, in
// the console's "- " / "+ " lines. Only facts custody holds are shown,
// never a server's words (the tool's description) beside them; every
// line the agent's arguments bring is indented JSON or a diff line, so
// none can pass for one of custody's.
func clientMessage(a custody.Approval) (string, error) {
	var args bytes.Buffer
	if err := json.Indent(&args, a.Arguments, "", "  "); err != nil {
		args.Reset()
		args.Write(a.Arguments)
	}
	if args.Len() > maxClientArguments {
		return "", errTooLong
	}
	var b strings.Builder
	fmt.Fprintf(&b, "custody holds this call until it is approved or declined.\n\n")
	fmt.Fprintf(&b, "Tool: %s\nAgent: %s\nApproval: %s (expires %s)\n", a.Tool, a.Requester, a.ID, custody.FormatTime(a.ExpiresAt))
	fmt.Fprintf(&b, "\nArguments, exactly as they will run:\n%s\n", args.String())
	for i, d := range editDiffs(a.Arguments) {
		if i == 0 {
			b.WriteString("\nWhat the edit changes:\n")
		}
		b.WriteString(d)
	}
	b.WriteString("\nApprove runs this call once, exactly as shown. Decline refuses it.")
	return b.String(), nil
}

// editPairs name the old and new text of an edit in the arguments of the
// tools that make one: the reference filesystem server's edit_file
// (edits: [{oldText, newText}]) and coding agents' edit tools.
var editPairs = [][2]string{{"oldText", "newText"}, {"old_string", "new_string"}, {"old_str", "new_str"}, {"oldString", "newString"}}

// editDiffs returns the diff of each edit args makes: every object, at the
// top or within its members (down to a few levels), with a string pair of
// editPairs. None when args makes no edit.
func editDiffs(args json.RawMessage) []string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 3 {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for _, p := range editPairs {
				before, ok1 := t[p[0]].(string)
				after, ok2 := t[p[1]].(string)
				if ok1 && ok2 {
					out = append(out, textDiff(before, after))
				}
			}
			// In key order, so that the diffs come in a stable one.
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], depth+1)
			}
		case []any:
			for _, e := range t {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}

// maxDiffLines bounds the lines a diff compares; longer texts are shown
// whole, removed then added.
const maxDiffLines = 500

// textDiff renders the change from before to after line by line as the
// console shows a diff: "- " for a line removed, "+ " for a line added,
// "  " for a line kept; unchanged runs of more than two lines are cut to
// "  …".
func textDiff(before, after string) string {
	a, b := splitLines(before), splitLines(after)
	var ops []string
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, l := range a {
			ops = append(ops, "- "+l)
		}
		for _, l := range b {
			ops = append(ops, "+ "+l)
		}
	} else {
		ops = linediff.Lines(a, b)
	}
	return linediff.Compact(ops)
}

// splitLines splits s into its lines, without a last empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
