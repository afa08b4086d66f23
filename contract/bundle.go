package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
)

// Bundle returns a standalone schema document for ref, usable as an MCP
// inputSchema or as LLM tool parameters: the schema itself with "$schema"
// set (the contract's, or draft 2020-12), and every part of the contract it refers to copied under its
// "$defs" ($defs entries keep their names), with references rewritten to
// point into the bundle. Object keys come out sorted. Bundle returns
// ENOTFOUND for an unknown ref and EINVALID when the schema refers outside
// its own contract.
func (r *Registry) Bundle(ref string) (json.RawMessage, error) {
	uri, err := r.Resolve(ref)
	if err != nil {
		return nil, err
	}
	id, ptr, _ := strings.Cut(uri, "#")
	b := &bundler{id: id, tree: r.byID[id].tree, root: ptr, defs: map[string]any{}, names: map[string]string{}}
	out, err := b.build()
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "schema %s cannot be bundled: %v", uri, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("encode bundle of %s: %w", uri, err)}
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// bundler copies a subschema out of its contract. Every reference into
// the contract is mapped to a place in the bundle: into the subschema
// itself, or to a copy of the referenced part under the bundle's $defs.
type bundler struct {
	id    string         // contract $id
	tree  any            // contract document
	root  string         // pointer of the bundled subschema
	defs  map[string]any // bundle $defs being filled
	names map[string]string
	// pending holds copied parts whose references are still to rewrite.
	pending []any
}

func (b *bundler) build() (any, error) {
	src, _ := locate(b.tree, b.root)
	obj, ok := src.(map[string]any)
	if !ok {
		return src, nil // a boolean schema refers to nothing
	}
	root := deepCopy(obj).(map[string]any)
	delete(root, "$id")
	if own, ok := root["$defs"].(map[string]any); ok {
		for name, def := range own {
			b.defs[name] = def // refs into them point inside the root already
		}
	}
	b.pending = append(b.pending, root)
	for len(b.pending) > 0 {
		next := b.pending[0]
		b.pending = b.pending[1:]
		if err := b.rewrite(next, false); err != nil {
			return nil, err
		}
	}
	root["$schema"] = draft2020.URI
	if dialect, ok := member(b.tree, "$schema").(string); ok {
		root["$schema"] = dialect
	}
	if len(b.defs) > 0 {
		root["$defs"] = b.defs
	}
	return root, nil
}

// isSchemaMap reports whether the keyword k maps names to schemas: there,
// every member is a schema, whatever its name.
func isSchemaMap(k string) bool {
	switch k {
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		return true
	}
	return false
}

// isData reports whether the keyword k holds instance data, never
// schemas, so that a "$ref" member inside it is data too.
func isData(k string) bool {
	switch k {
	case "enum", "const", "default", "examples":
		return true
	}
	return false
}

// rewrite maps every "$ref" and "$dynamicRef" in v. When names is set, v
// maps names to schemas rather than being a schema.
func (b *bundler) rewrite(v any, names bool) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if err := b.rewriteMember(v, k, child, names); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := b.rewrite(child, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bundler) rewriteMember(obj map[string]any, k string, child any, names bool) error {
	ref, isString := child.(string)
	switch {
	case names:
		return b.rewrite(child, false)
	case (k == "$ref" || k == "$dynamicRef") && isString:
		mapped, err := b.mapRef(ref)
		obj[k] = mapped
		return err
	case isData(k):
		return nil
	}
	return b.rewrite(child, isSchemaMap(k))
}

// mapRef returns where ref, a reference inside the contract, points in
// the bundle.
func (b *bundler) mapRef(ref string) (string, error) {
	base, frag, _ := strings.Cut(ref, "#")
	if base != "" && base != b.id {
		return ref, fmt.Errorf("reference %q leaves the contract", ref)
	}
	frag, err := url.PathUnescape(frag)
	switch {
	case err != nil:
		return ref, fmt.Errorf("reference %q: %v", ref, err)
	case frag != "" && frag[0] != '/':
		return "#" + frag, nil // a plain-name anchor travels with its schema
	case frag == b.root || strings.HasPrefix(frag, b.root+"/"):
		return "#" + frag[len(b.root):], nil
	}
	part, rest := splitPart(frag)
	name, err := b.copyPart(part)
	if err != nil {
		return ref, err
	}
	return "#/$defs/" + strictjson.EscapeToken(name) + rest, nil
}

// splitPart splits a pointer into the part of the contract to copy and
// the rest of the pointer inside it: a $defs entry is copied whole.
func splitPart(frag string) (part, rest string) {
	if after, ok := strings.CutPrefix(frag, "/$defs/"); ok {
		name, tail, _ := strings.Cut(after, "/")
		if tail != "" {
			tail = "/" + tail
		}
		return "/$defs/" + name, tail
	}
	return frag, ""
}

// copyPart copies the contract part at ptr into the bundle's $defs once
// and returns its name there.
func (b *bundler) copyPart(ptr string) (string, error) {
	if name, done := b.names[ptr]; done {
		return name, nil
	}
	src, ok := locate(b.tree, ptr)
	if !ok {
		return "", fmt.Errorf("reference to %s finds nothing", ptr)
	}
	name := b.freeName(ptr)
	if name == "" {
		name = b.freeName("/contract") // the whole contract
	}
	cp := deepCopy(src)
	b.names[ptr] = name
	b.defs[name] = cp
	b.pending = append(b.pending, cp)
	return name, nil
}

// freeName picks the bundle $defs name for the contract part at ptr: a
// $defs entry keeps its name unless the subschema's own $defs holds it.
func (b *bundler) freeName(ptr string) string {
	name := strings.NewReplacer("/", "_", "~1", "_", "~0", "_", "$", "").Replace(strings.TrimPrefix(ptr, "/"))
	if def, ok := strings.CutPrefix(ptr, "/$defs/"); ok {
		name = strings.NewReplacer("~1", "/", "~0", "~").Replace(def)
	}
	for base, i := name, 2; ; i++ {
		if _, taken := b.defs[name]; !taken {
			return name
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
}

// deepCopy copies a decoded JSON tree.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, child := range v {
			out[k] = deepCopy(child)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, child := range v {
			out[i] = deepCopy(child)
		}
		return out
	}
	return v
}
