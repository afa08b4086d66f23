package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The server blocks of MCP clients' own configuration files load as they
// are: Claude Desktop's and Cursor's "mcpServers", VS Code's "servers"
// (with its "inputs"), Windsurf's "serverUrl", Cursor's "envFile" and
// the keys Cline and Roo Code add. What custody cannot honour is refused
// with the path and the fix, or, when leaving it out changes nothing
// custody promises, ignored with a warning.

// serverBlocks are the top-level keys that declare MCP servers, in the
// order their servers are merged.
var serverBlocks = []string{"mcpServers", "servers"}

// ignoredKeys are client-only members of a server block custody accepts
// and ignores, with why.
var ignoredKeys = map[string]string{
	"alwaysAllow":   "custody asks for approval as each tool's policy in \"tools\" says, not by a client's list",
	"autoApprove":   "custody asks for approval as each tool's policy in \"tools\" says, not by a client's list",
	"disabledTools": "a tool is exposed only when \"tools\" governs it; leave it out of \"tools\" to hide it",
}

// Warnings returns what the file holds that custody accepts and ignores,
// one line each, naming its path.
func (f *File) Warnings() []string { return slices.Clone(f.warnings) }

// timeout returns the server's timeout, zero when it sets none. Parse
// has checked it is a positive number of seconds.
func (s MCPServer) timeout() time.Duration {
	secs, _ := s.Timeout.Float64()
	return time.Duration(secs * float64(time.Second))
}

// checkServerShapes refuses, with the fix, what the schema would only
// refuse obscurely: a server declared in both blocks, a url given twice,
// a key of the other way of reaching a server (env at a url, headers for
// a command), a type at odds with how the server is reached.
func checkServerShapes(tree any) error {
	top, _ := tree.(map[string]any)
	seen := map[string]string{}
	for _, block := range serverBlocks {
		servers, _ := top[block].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			ptr := "/" + block + "/" + escape(name)
			if prev, dup := seen[name]; dup {
				return fmt.Errorf("%s: server %q is also declared at %s: keep one of the two", ptr, name, prev)
			}
			seen[name] = ptr
			s, _ := servers[name].(map[string]any)
			if err := checkServerShape(ptr, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkServerShape checks one server block at ptr.
func checkServerShape(ptr string, s map[string]any) error {
	_, url := s["url"]
	_, serverURL := s["serverUrl"]
	_, command := s["command"]
	if url && serverURL {
		return fmt.Errorf("%s: both url and serverUrl are given: keep one (serverUrl is Windsurf's name for url)", ptr)
	}
	if url || serverURL {
		for _, k := range []string{"args", "env", "envFile", "cwd"} {
			if _, ok := s[k]; ok && !command {
				return fmt.Errorf("%s/%s: a server at a url takes no %s, which is for a server custody starts with a command", ptr, k, k)
			}
		}
	}
	if _, ok := s["headers"]; ok && command && !url && !serverURL {
		return fmt.Errorf("%s/headers: a server custody starts with a command takes no headers, which are for a server at a url", ptr)
	}
	if _, ok := s["oauth"]; ok && command && !url && !serverURL {
		return fmt.Errorf("%s/oauth: oauth is for a server at a url; a server custody starts with a command takes its credentials in env", ptr)
	}
	typ, _ := s["type"].(string)
	switch {
	case typ == "stdio" && !command:
		return fmt.Errorf("%s/type: \"stdio\" needs a command; for a server at a url write \"type\": \"http\" (or \"sse\" for the legacy HTTP+SSE transport)", ptr)
	case typ != "" && typ != "stdio" && command:
		return fmt.Errorf("%s/type: %q needs a url, but the server has a command: write \"type\": \"stdio\" or leave type out", ptr, typ)
	}
	return nil
}

// adoptClientShapes rewrites the checked tree into the shape File
// decodes: the servers of every block under mcpServers, serverUrl as url,
// envFile's variables in env, and what custody ignores removed, with a
// warning for each.
func adoptClientShapes(tree map[string]any) (warnings []string, err error) {
	if _, ok := tree["inputs"]; ok {
		warnings = append(warnings, "/inputs: ignored: custody prompts for nothing; a value comes from ${env:NAME}")
		delete(tree, "inputs")
	}
	merged := map[string]any{}
	for _, block := range serverBlocks {
		servers, _ := tree[block].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			ptr := "/" + block + "/" + escape(name)
			s, _ := servers[name].(map[string]any)
			w, err := adoptServer(ptr, s)
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, w...)
			merged[name] = s
		}
		delete(tree, block)
	}
	if len(merged) > 0 {
		tree["mcpServers"] = merged
	}
	return warnings, nil
}

// adoptServer rewrites one server block at ptr. The envFile of a
// disabled server is not read: it may not exist where custody runs.
func adoptServer(ptr string, s map[string]any) (warnings []string, err error) {
	for _, k := range slices.Sorted(maps.Keys(ignoredKeys)) {
		if _, ok := s[k]; ok {
			warnings = append(warnings, fmt.Sprintf("%s/%s: ignored: %s", ptr, k, ignoredKeys[k]))
			delete(s, k)
		}
	}
	if u, ok := s["serverUrl"]; ok {
		s["url"] = u
		delete(s, "serverUrl")
	}
	if p, ok := s["envFile"].(string); ok && s["disabled"] != true {
		vars, err := readEnvFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s/envFile: %w", ptr, err)
		}
		env, _ := s["env"].(map[string]any)
		if env == nil {
			env = map[string]any{}
		}
		for k, v := range vars {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
		s["env"] = env
	}
	return warnings, nil
}

// varRef matches any ${...} reference.
var varRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// checkVariables refuses every ${...} in the strings of v (at ptr) that
// is not ${env:NAME}: an editor's variables (${workspaceFolder},
// ${userHome}, ${input:ID} ...) mean nothing outside the editor, and
// custody must not pass them on to a server as literal text.
func checkVariables(v any, ptr string) error {
	switch t := v.(type) {
	case string:
		for _, m := range varRef.FindAllStringSubmatch(t, -1) {
			if err := checkVariable(orRoot(ptr), m[0], m[1]); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := checkVariables(t[k], ptr+"/"+escape(k)); err != nil {
				return err
			}
		}
	case []any:
		for i, sub := range t {
			if err := checkVariables(sub, fmt.Sprintf("%s/%d", ptr, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkVariable checks one reference ref, whose inside is name, at ptr.
func checkVariable(ptr, ref, name string) error {
	switch {
	case envRef.MatchString(ref):
		return nil
	case strings.HasPrefix(name, "env:"):
		return fmt.Errorf("%s: %s: %q is not an environment variable name (letters, digits and _, not starting with a digit)", ptr, ref, strings.TrimPrefix(name, "env:"))
	case strings.HasPrefix(name, "input:"):
		return fmt.Errorf("%s: %s is a VS Code input, which custody cannot prompt for: write ${env:NAME} and set NAME in custody's environment", ptr, ref)
	}
	return fmt.Errorf("%s: %s is an editor variable, which custody does not expand: write the value itself, or ${env:NAME} to read it from custody's environment", ptr, ref)
}

// checkDuplicateKeys refuses an object that names one key twice: JSON
// decoders keep one of the two silently, so a second "env" or a second
// server of one name would be lost without a word.
func checkDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return duplicateKeys(dec, "")
}

// duplicateKeys reads one value from dec (at ptr).
func duplicateKeys(dec *json.Decoder, ptr string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("not valid JSON: %w", err)
			}
			k, _ := kt.(string)
			if seen[k] {
				return fmt.Errorf("%s: key %q appears twice: keep one (JSON readers silently drop one of the two)", orRoot(ptr), k)
			}
			seen[k] = true
			if err := duplicateKeys(dec, ptr+"/"+escape(k)); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := duplicateKeys(dec, fmt.Sprintf("%s/%d", ptr, i)); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// adopt rewrites the checked tree (see adoptClientShapes) and returns it
// as the document File decodes.
func adopt(tree any) (doc []byte, warnings []string, err error) {
	top, _ := tree.(map[string]any)
	if warnings, err = adoptClientShapes(top); err != nil {
		return nil, nil, err
	}
	doc, err = json.Marshal(top)
	return doc, warnings, err
}
