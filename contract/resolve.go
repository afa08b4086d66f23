package contract

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
)

// Resolve returns the canonical reference ("$id#pointer") of ref, which is
// a short name, a contract $id with a JSON pointer fragment, or a contract
// $id alone (its root). An unknown ref, or a pointer that does not reach a
// schema, is ENOTFOUND.
func (r *Registry) Resolve(ref string) (string, error) {
	if uri, ok := r.byName[ref]; ok {
		return uri, nil
	}
	if _, ok := r.compiled[ref]; ok {
		return ref, nil
	}
	id, frag, _ := strings.Cut(ref, "#")
	d, ok := r.byID[id]
	if !ok {
		return "", notFound(ref)
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil || (ptr != "" && ptr[0] != '/') {
		return "", custody.Errorf(custody.ENOTFOUND, "schema %q: the fragment must be a JSON pointer", ref)
	}
	switch target, ok := locate(d.tree, ptr); {
	case !ok:
		return "", custody.Errorf(custody.ENOTFOUND, "schema %q: nothing at %s in %s", ref, ptr, id)
	case !isSchema(target):
		return "", custody.Errorf(custody.ENOTFOUND, "schema %q: the value at %s is not a schema", ref, ptr)
	}
	return id + "#" + ptr, nil
}

func notFound(ref string) *custody.Error {
	return custody.Errorf(custody.ENOTFOUND, "unknown schema %q (run 'custody contracts' to list the named schemas)", ref)
}

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// locate returns the value at the JSON pointer ptr in tree.
func locate(tree any, ptr string) (any, bool) {
	if ptr == "" {
		return tree, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch v := tree.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			tree = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) || tok != strconv.Itoa(i) {
				return nil, false
			}
			tree = v[i]
		default:
			return nil, false
		}
	}
	return tree, true
}

// schema returns the compiled schema for a canonical reference. Named
// schemas were compiled by Load; any other pointer is compiled on first
// use and kept.
func (r *Registry) schema(uri string) (*schema, error) {
	if s, ok := r.compiled[uri]; ok {
		return s, nil
	}
	if s, ok := r.lazy.Load(uri); ok {
		return s.(*schema), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.lazy.Load(uri); ok {
		return s.(*schema), nil
	}
	lib, err := r.compiler.Compile(uri)
	if err != nil {
		return nil, &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("schema %s does not compile", uri), Err: err}
	}
	s := &schema{lib: lib, fast: r.compileFast(uri)}
	r.lazy.Store(uri, s)
	return s, nil
}
