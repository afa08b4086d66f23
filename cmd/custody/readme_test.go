package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The README is checked where it can be checked mechanically: the
// commands, subcommands and flags it names exist, the configuration keys
// of its examples and tables are in the schema, and the files it links to
// or names in code are in the repository.

// The tables the checks read; a check that lost its table would pass on
// nothing.
const (
	keyTable     = "| key | what |"     // the configuration file's keys
	settingTable = "| setting | flag |" // flags, variables and defaults of serve
)

// TestREADMECommands runs `custody COMMAND [SUB] -h` for every command the
// README names and checks each flag named beside it against the help.
func TestREADMECommands(t *testing.T) {
	doc := readMarkdown(t, "../../README.md")
	if len(tableRows(doc.prose, settingTable)) == 0 {
		t.Fatalf("README.md has no table starting %q", settingTable)
	}
	for _, p := range checkCommands(newHelpCLI(t), doc) {
		t.Error(p)
	}
}

// TestREADMEConfigKeys checks the README's configuration keys against
// `custody config schema`.
func TestREADMEConfigKeys(t *testing.T) {
	doc := readMarkdown(t, "../../README.md")
	if len(doc.json) == 0 || len(tableRows(doc.prose, keyTable)) == 0 {
		t.Fatalf("README.md has no json example or no table starting %q", keyTable)
	}
	for _, p := range checkConfigKeys(configSchema(t), doc) {
		t.Error(p)
	}
}

// TestREADMEFiles checks the relative links of README.md and docs/*.md,
// and the repository files README.md names in code.
func TestREADMEFiles(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{"../../README.md"}, files...) {
		for _, p := range checkLinks(readMarkdown(t, path)) {
			t.Error(p)
		}
	}
	for _, p := range checkPaths(readMarkdown(t, "../../README.md")) {
		t.Error(p)
	}
}

// TestREADMEChecksCatchWrongNames proves the checks above fail on a
// document that names what does not exist.
func TestREADMEChecksCatchWrongNames(t *testing.T) {
	dir := t.TempDir()
	text := strings.Join([]string{
		"Run `custody nosuchcommand`, `custody ledger nosuchsub` and",
		"`custody ledger verify --no-such-verify-flag`; `--no-such-flag` anywhere;",
		"`custody ledger verify --jsonl FILE` is right.",
		"",
		"```sh",
		"./custody serve --no-such-serve-flag   # comment `custody nosuchincomment`",
		"```",
		"",
		"| setting | flag | environment | default |",
		"|---|---|---|---|",
		"| a | `--no-such-config-flag` | | |",
		"",
		"| key | what |",
		"|---|---|",
		"| `noSuchTopKey` | x |",
		"| `http` | `{\"noSuchHTTPKey\"}`, `maxNoSuchBytes` |",
		"",
		"```json",
		`{"tools": {"x": {"access": "READ", "noSuchPolicyKey": 1}}, "noSuchKey": 1}`,
		"```",
		"",
		"[gone](no/such/file.md) <img src=\"no-such.png\">",
		"",
		"```sh",
		"./custody assure lint no-such/envelope.json",
		"```",
	}, "\n")
	path := filepath.Join(dir, "README.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := readMarkdown(t, path)
	problems := checkCommands(newHelpCLI(t), doc)
	problems = append(problems, checkConfigKeys(configSchema(t), doc)...)
	problems = append(problems, checkLinks(doc)...)
	problems = append(problems, checkPaths(doc)...)
	all := strings.Join(problems, "\n")
	for _, name := range []string{
		`"nosuchcommand"`, `"nosuchsub"`, `"nosuchincomment"`, "--no-such-verify-flag",
		"--no-such-flag", "--no-such-serve-flag", "--no-such-config-flag",
		`"noSuchTopKey"`, `"noSuchHTTPKey"`, `"maxNoSuchBytes"`, "noSuchPolicyKey", "noSuchKey",
		"no/such/file.md", "no-such.png", "no-such/envelope.json",
	} {
		if !strings.Contains(all, name) {
			t.Errorf("no problem names %s; problems:\n%s", name, all)
		}
	}
	for _, right := range []string{"--jsonl", `"access"`} {
		if strings.Contains(all, right) {
			t.Errorf("a problem names %s, which is right:\n%s", right, all)
		}
	}
	if len(problems) != 15 {
		t.Errorf("%d problems, want 15:\n%s", len(problems), all)
	}
}

// markdown is a Markdown file split into the parts the checks read.
type markdown struct {
	path  string
	prose string   // the text outside fenced blocks
	spans []string // inline code spans, in prose and in shell comments
	shell []string // shell command lines, comments cut, continuations joined
	json  []string // fenced json blocks
}

func readMarkdown(t *testing.T, path string) markdown {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseMarkdown(path, string(b))
}

var (
	spanRE    = regexp.MustCompile("`([^`\n]+(?:\n[^`\n]+)?)`")
	commentRE = regexp.MustCompile(`(^|\s)#.*$`)
)

func parseMarkdown(path, text string) markdown {
	d := markdown{path: path}
	var prose, block []string
	lang, inBlock := "", false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				d.addBlock(lang, block)
				block = nil
			}
			inBlock, lang = !inBlock, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			prose = append(prose, "")
			continue
		}
		if inBlock {
			block = append(block, line)
		} else {
			prose = append(prose, line)
		}
	}
	d.prose = strings.Join(prose, "\n")
	for _, m := range spanRE.FindAllStringSubmatch(d.prose, -1) {
		d.spans = append(d.spans, strings.ReplaceAll(m[1], `\|`, "|"))
	}
	return d
}

func (d *markdown) addBlock(lang string, lines []string) {
	switch lang {
	case "json":
		d.json = append(d.json, strings.Join(lines, "\n"))
	case "sh", "bash", "shell", "console":
		joined := ""
		for _, line := range lines {
			if c := commentRE.FindString(line); c != "" {
				for _, m := range spanRE.FindAllStringSubmatch(c, -1) {
					d.spans = append(d.spans, m[1])
				}
				line = strings.TrimSuffix(line, c)
			}
			if cont, ok := strings.CutSuffix(strings.TrimRight(line, " "), `\`); ok {
				joined += cont + " "
				continue
			}
			d.shell = append(d.shell, joined+line)
			joined = ""
		}
	}
}

// helpCLI runs `custody ... -h` in process and remembers the answers.
type helpCLI struct {
	t        *testing.T
	commands map[string]bool
	answers  map[string]helpAnswer
}

type helpAnswer struct {
	code   int
	output string
	flags  map[string]bool
}

func newHelpCLI(t *testing.T) *helpCLI {
	c := &helpCLI{t: t, commands: map[string]bool{}, answers: map[string]helpAnswer{}}
	_, _, stderr := runMain(t, nil, "", "-h")
	_, list, ok := strings.Cut(stderr, "commands:\n")
	if !ok {
		t.Fatalf("custody -h lists no commands:\n%s", stderr)
	}
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(line, "  ") {
			c.commands[f[0]] = true
		}
	}
	return c
}

var flagLineRE = regexp.MustCompile(`(?m)^\s+--?([A-Za-z0-9][A-Za-z0-9_-]*)(\s|$)`)

// help runs `custody ARGS... -h`.
func (c *helpCLI) help(args ...string) helpAnswer {
	key := strings.Join(args, " ")
	if a, ok := c.answers[key]; ok {
		return a
	}
	code, stdout, stderr := runMain(c.t, nil, "", append(append([]string(nil), args...), "-h")...)
	a := helpAnswer{code: code, output: stdout + stderr, flags: map[string]bool{"h": true, "help": true}}
	for _, m := range flagLineRE.FindAllStringSubmatch(stderr, -1) {
		a.flags[m[1]] = true
	}
	c.answers[key] = a
	return a
}

// dispatches reports whether a command takes a subcommand: its help
// defines no flags of its own.
func (c *helpCLI) dispatches(cmd string) bool {
	for f := range c.help(cmd).flags {
		if f != "h" && f != "help" {
			return false
		}
	}
	return true
}

var wordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// mention is one `custody COMMAND [SUB] [ARG...]` the document names.
type mention struct {
	text string
	args []string // after "custody"
}

// mentions finds every custody command line in shell blocks and code
// spans; a span may also start with a command name (`serve --witness`).
func (c *helpCLI) mentions(d markdown) (ms []mention, rest []string) {
	for _, line := range d.shell {
		ms = append(ms, commandsIn(line)...)
	}
	for _, span := range d.spans {
		found := commandsIn(span)
		if f := shellFields(span); len(found) == 0 && len(f) > 1 && c.commands[f[0]] {
			found = []mention{{text: span, args: f}}
		}
		if len(found) == 0 {
			rest = append(rest, span)
		}
		ms = append(ms, found...)
	}
	return ms, rest
}

// commandsIn returns the custody commands of a shell line or span.
func commandsIn(line string) []mention {
	var ms []mention
	fields := shellFields(line)
	for i, f := range fields {
		if f != "custody" && !strings.HasSuffix(f, "/custody") {
			continue
		}
		var args []string
		for _, a := range fields[i+1:] {
			if a == "|" || a == ";" || a == "&&" || a == "||" || a == "&" || strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") || strings.HasPrefix(a, ")") {
				break
			}
			args = append(args, a)
		}
		if len(args) > 0 && wordRE.MatchString(args[0]) {
			ms = append(ms, mention{text: strings.TrimSpace(line), args: args})
		}
	}
	return ms
}

// shellFields splits a line on white space outside quotes.
func shellFields(line string) []string {
	var fields []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
			cur.WriteRune(r)
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				fields = append(fields, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		fields = append(fields, cur.String())
	}
	return fields
}

var flagRE = regexp.MustCompile(`(?:^|[\s\[(|,` + "`" + `])--([a-z][a-z0-9-]*)(\*?)`)

// flagsIn returns the --flags a text names; a name ending in "*" is a prefix.
func flagsIn(text string) []string {
	var names []string
	for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1]+m[2])
	}
	return names
}

// checkCommands checks every command, subcommand and flag the document names.
func checkCommands(c *helpCLI, d markdown) []string {
	var problems []string
	ms, rest := c.mentions(d)
	known := map[string]bool{} // every flag of every command named
	for _, m := range ms {
		cmd := m.args[0]
		if a := c.help(cmd); !c.commands[cmd] || strings.Contains(a.output, "unknown command") {
			problems = append(problems, fmt.Sprintf("%s: %q names command %q, which custody does not have", d.path, m.text, cmd))
			continue
		}
		path, flagArgs := []string{cmd}, m.args[1:]
		if c.dispatches(cmd) && len(m.args) > 1 && wordRE.MatchString(m.args[1]) {
			path, flagArgs = m.args[:2], m.args[2:]
			if a := c.help(path...); a.code != exitOK || strings.Contains(a.output, "unknown subcommand") {
				problems = append(problems, fmt.Sprintf("%s: %q names %q, which custody %s does not have (custody %s -h exits %d)", d.path, m.text, m.args[1], cmd, strings.Join(path, " "), a.code))
				continue
			}
		}
		flags := c.help(path...).flags
		for f := range flags {
			known[f] = true
		}
		for _, f := range flagsIn(strings.Join(flagArgs, " ")) {
			if !hasFlag(flags, f) {
				problems = append(problems, fmt.Sprintf("%s: %q names --%s, which custody %s does not take", d.path, m.text, f, strings.Join(path, " ")))
			}
		}
	}
	serve, checked := c.help("serve").flags, map[string]bool{}
	for _, row := range tableRows(d.prose, settingTable) {
		for _, f := range flagsIn(strings.Join(row, " ")) {
			checked[f] = true
			if !hasFlag(serve, f) {
				problems = append(problems, fmt.Sprintf("%s: the configuration table names --%s, which custody serve does not take", d.path, f))
			}
		}
	}
	for _, span := range rest {
		for _, f := range flagsIn(span) {
			if !checked[f] && !hasFlag(known, f) {
				problems = append(problems, fmt.Sprintf("%s: `%s` names --%s, which no command the document names takes", d.path, span, f))
			}
		}
	}
	return problems
}

func hasFlag(flags map[string]bool, name string) bool {
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		for f := range flags {
			if strings.HasPrefix(f, prefix) {
				return true
			}
		}
		return false
	}
	return flags[name]
}

// tableRows returns the cells of the table whose header starts with header.
func tableRows(prose, header string) [][]string {
	var rows [][]string
	in := false
	for _, line := range strings.Split(prose, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			rows = append(rows, tableCells(line))
		default:
			in = false
		}
	}
	return rows
}

// tableCells splits a table row on the bars that are not escaped (\|).
func tableCells(line string) []string {
	var cells []string
	var cur strings.Builder
	line = strings.TrimPrefix(strings.TrimSpace(line), "|")
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}

// configSchema returns the output of `custody config schema`.
func configSchema(t *testing.T) map[string]any {
	t.Helper()
	code, stdout, stderr := runMain(t, nil, "", "config", "schema")
	var schema map[string]any
	if code != exitOK {
		t.Fatalf("custody config schema exits %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &schema); err != nil {
		t.Fatalf("custody config schema: %v", err)
	}
	return schema
}

// schemaNode resolves a node's local $ref ("#/$defs/...").
func schemaNode(root map[string]any, v any) map[string]any {
	n, _ := v.(map[string]any)
	for i := 0; n != nil && i < 8; i++ {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		var next any = root
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := next.(map[string]any)
			next = m[p]
		}
		n, _ = next.(map[string]any)
	}
	return n
}

// member returns the schema of a member of an object node: free is true
// when the node declares no members (a free-form value, such as a JSON
// Schema of a tool's arguments).
func member(root, n map[string]any, key string) (child map[string]any, free, ok bool) {
	props, hasProps := n["properties"].(map[string]any)
	if p, found := props[key]; found {
		return schemaNode(root, p), false, true
	}
	if ap, isSchema := n["additionalProperties"].(map[string]any); isSchema {
		return schemaNode(root, ap), false, true
	}
	_, closed := n["additionalProperties"]
	if !hasProps && !closed {
		return nil, true, true
	}
	return nil, false, false
}

// walkConfig checks every member of an example value against the schema.
func walkConfig(root, n map[string]any, v any, path string, problems *[]string) {
	if n == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child, free, ok := member(root, n, k)
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s.%s is not in custody config schema", path, k))
			} else if !free {
				walkConfig(root, child, v[k], path+"."+k, problems)
			}
		}
	case []any:
		for i, e := range v {
			walkConfig(root, schemaNode(root, n["items"]), e, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	}
}

// subtreeKeys adds every member name declared at or below a node.
func subtreeKeys(root, n map[string]any, into map[string]bool, depth int) {
	if n == nil || depth > 16 {
		return
	}
	props, _ := n["properties"].(map[string]any)
	for k, p := range props {
		into[k] = true
		subtreeKeys(root, schemaNode(root, p), into, depth+1)
	}
	for _, k := range []string{"additionalProperties", "items"} {
		subtreeKeys(root, schemaNode(root, n[k]), into, depth+1)
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		branches, _ := n[k].([]any)
		for _, b := range branches {
			subtreeKeys(root, schemaNode(root, b), into, depth+1)
		}
	}
}

var (
	quotedKeyRE = regexp.MustCompile(`"([a-z][A-Za-z0-9_]*)"`)
	objectRE    = regexp.MustCompile(`^"([A-Za-z_]+)":\s*\[?\{(.*)\}\]?$`)
	memberRE    = regexp.MustCompile(`^"([a-z][A-Za-z0-9_]*)":`)
	camelRE     = regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$`)
)

// checkConfigKeys checks the keys of the document's JSON examples, of its
// table of the file's keys, and of the "key":{...} shapes in its
// configuration table against the configuration schema.
func checkConfigKeys(root map[string]any, d markdown) []string {
	var problems []string
	for i, block := range d.json {
		var v any
		if err := json.Unmarshal([]byte(block), &v); err != nil {
			problems = append(problems, fmt.Sprintf("%s: json example %d: %v", d.path, i+1, err))
			continue
		}
		walkConfig(root, root, v, d.path+": json example", &problems)
	}
	top, _ := root["properties"].(map[string]any)
	under := func(key string) map[string]bool {
		keys := map[string]bool{}
		subtreeKeys(root, schemaNode(root, top[key]), keys, 0)
		return keys
	}
	for _, row := range tableRows(d.prose, keyTable) {
		for _, m := range spanRE.FindAllStringSubmatch(row[0], -1) {
			key := m[1]
			if _, ok := top[key]; !ok {
				problems = append(problems, fmt.Sprintf("%s: the table of keys names %q, which is not in custody config schema", d.path, key))
				continue
			}
			keys := under(key)
			for _, name := range namedMembers(row[1]) {
				if !keys[name] {
					problems = append(problems, fmt.Sprintf("%s: the table of keys names %q under %q, which is not in custody config schema", d.path, name, key))
				}
			}
		}
	}
	for _, row := range tableRows(d.prose, settingTable) {
		for _, m := range spanRE.FindAllStringSubmatch(strings.Join(row, " "), -1) {
			o := objectRE.FindStringSubmatch(m[1])
			if o == nil {
				continue
			}
			if _, ok := top[o[1]]; !ok {
				problems = append(problems, fmt.Sprintf("%s: the configuration table names %q, which is not in custody config schema", d.path, o[1]))
				continue
			}
			keys := under(o[1])
			for _, k := range quotedKeyRE.FindAllStringSubmatch(o[2], -1) {
				if !keys[k[1]] {
					problems = append(problems, fmt.Sprintf("%s: the configuration table names %q under %q, which is not in custody config schema", d.path, k[1], o[1]))
				}
			}
		}
	}
	return problems
}

// namedMembers returns the member names a table cell gives in code: the
// names inside {...}, a "name": value, or a lone camelCase name.
func namedMembers(cell string) []string {
	var names []string
	for _, m := range spanRE.FindAllStringSubmatch(cell, -1) {
		span := m[1]
		switch {
		case strings.Contains(span, "{"):
			for _, k := range quotedKeyRE.FindAllStringSubmatch(span, -1) {
				names = append(names, k[1])
			}
		case memberRE.MatchString(span):
			names = append(names, memberRE.FindStringSubmatch(span)[1])
		case camelRE.MatchString(span):
			names = append(names, span)
		}
	}
	return names
}

var (
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	srcRE  = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
)

// checkLinks checks that every relative link of the document is a file.
func checkLinks(d markdown) []string {
	var problems []string
	prose := spanRE.ReplaceAllString(d.prose, "")
	var targets []string
	for _, re := range []*regexp.Regexp{linkRE, srcRE} {
		for _, m := range re.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
	}
	for _, target := range targets {
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
			continue
		}
		file, _, _ := strings.Cut(target, "#")
		if _, err := os.Stat(filepath.Join(filepath.Dir(d.path), file)); err != nil {
			problems = append(problems, fmt.Sprintf("%s: link %s: no such file", d.path, target))
		}
	}
	return problems
}

var repoPathRE = regexp.MustCompile(`^\.?[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)+\.(go|json|md|sh|png|txt)$`)

// checkPaths checks that every file of the repository the document names
// in code (a relative path with a directory and a source file's
// extension, such as examples/custody.json) exists.
func checkPaths(d markdown) []string {
	var problems []string
	seen := map[string]bool{}
	for _, text := range append(append([]string(nil), d.spans...), d.shell...) {
		for _, f := range shellFields(text) {
			f = strings.Trim(f, "\"'()[],;:")
			if seen[f] || !repoPathRE.MatchString(f) {
				continue
			}
			seen[f] = true
			if _, err := os.Stat(filepath.Join(filepath.Dir(d.path), f)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: names %s: no such file", d.path, f))
			}
		}
	}
	return problems
}
