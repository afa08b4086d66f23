package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract/fast"
	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/contract/internal/format"
	"github.com/custody-dev/custody/internal/strictjson"
)

// Source is a contract that a package owning it hands to Load: a seed
// system's tools contract, the gateway's envelope format.
type Source struct {
	// File is the name the contract is listed under, e.g.
	// "peas-tools.json".
	File string
	// Raw is the contract's exact bytes. It must declare an absolute $id.
	Raw []byte
	// Names names the contract's schemas. It is given the contract as
	// decoded JSON (objects as map[string]any, arrays as []any, numbers
	// as json.Number); nil names none.
	Names func(tree any) []Name
}

// Name is a short name and the JSON pointer, within its contract, of the
// schema it stands for ("" for the root).
type Name struct {
	Name, Pointer string
}

// Pointer returns the JSON pointer made of tokens, each escaped.
func Pointer(tokens ...string) string { return strictjson.Pointer(tokens) }

// DefNames names each $defs entry of tree PREFIX:DEF, in key order.
func DefNames(prefix string, tree any) []Name {
	var out []Name
	for _, def := range sortedKeys(member(tree, "$defs")) {
		out = append(out, Name{prefix + ":" + def, Pointer("$defs", def)})
	}
	return out
}

// userNames names a user contract's root by its file's base name and each
// $defs entry as base:def.
func userNames(base string, tree any) []Name {
	return append([]Name{{base, ""}}, DefNames(base, tree)...)
}

// member walks object members by key; it returns nil where one is missing.
func member(v any, keys ...string) any {
	for _, k := range keys {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}

func sortedKeys(v any) []string {
	obj, _ := v.(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Load reads opts.Contracts, every *.json in opts.Dir and opts.Extra, and compiles every named schema. A contract that is not
// strict JSON, has no usable $id, repeats another's $id or a short name,
// or does not compile is an EINVALID error naming its file; a directory
// that does not exist is ENOTFOUND.
func Load(opts Options) (*Registry, error) {
	r := &Registry{
		maxBytes: opts.MaxBytes,
		byID:     map[string]*document{},
		byName:   map[string]string{},
		compiled: map[string]*schema{},
		printer:  newPrinter(),
		compiler: draft2020.NewCompiler(nil, true),
	}
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultMaxBytes
	}
	if err := r.addSources(opts.Contracts); err != nil {
		return nil, err
	}
	if err := r.addDir(opts.Dir); err != nil {
		return nil, err
	}
	if err := r.addExtra(opts.Extra); err != nil {
		return nil, err
	}
	if err := r.compileAll(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Registry) addSources(sources []Source) error {
	for _, s := range sources {
		names := s.Names
		if names == nil {
			names = func(any) []Name { return nil }
		}
		if err := r.add(s.File, "", s.Raw, names); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) addDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		kind := custody.EINVALID
		if os.IsNotExist(err) {
			kind = custody.ENOTFOUND
		}
		return &custody.Error{Kind: kind, Message: fmt.Sprintf("contracts directory %s cannot be read", dir), Err: err}
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if err := r.addFile(dir, e.Name()); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) addFile(dir, name string) error {
	path := filepath.Join(dir, name)
	raw, err := os.ReadFile(path)
	if err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("contract %s cannot be read", path), Err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("contract %s: no absolute path", path), Err: err}
	}
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	return r.add(path, fileURL, raw, userNamer(name))
}

func (r *Registry) addExtra(extra map[string][]byte) error {
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		base := filepath.Base(name)
		if err := r.add(name, "urn:custody:contract:"+url.PathEscape(base), extra[name], userNamer(base)); err != nil {
			return err
		}
	}
	return nil
}

// userNamer names a user contract after its file's base name.
func userNamer(file string) func(any) []Name {
	base := strings.TrimSuffix(filepath.Base(file), ".json")
	return func(tree any) []Name { return userNames(base, tree) }
}

// add registers one contract. defaultID is its id when it declares no
// $id ("" when it must declare one). A contract is strict JSON read
// exactly (strictjson.DecodeExact): its numbers are only ever compared
// exactly, so a bound such as 18446744073709551615 is kept, where a
// document validated against it is held to every number rule.
func (r *Registry) add(file, defaultID string, raw []byte, names func(any) []Name) error {
	tree, err := strictjson.DecodeExact(raw)
	if err != nil {
		return contractError(file, "is not valid JSON: %v", err)
	}
	id, err := contractID(tree, defaultID)
	if err != nil {
		return contractError(file, "%v", err)
	}
	if prev, dup := r.byID[id]; dup {
		return contractError(file, "repeats the $id %s of %s", id, prev.File)
	}
	title, _ := member(tree, "title").(string)
	d := &document{Contract: Contract{ID: id, Title: title, File: file}, raw: raw, tree: tree, fast: fast.NewCompiler(tree, id)}
	if err := r.compiler.AddResource(id, tree); err != nil {
		return contractError(file, "cannot be added: %v", err)
	}
	r.docs = append(r.docs, d)
	r.byID[id] = d
	return r.addNames(d, names(tree))
}

// contractID returns the contract's $id, which must be an absolute URI
// without a fragment; defaultID stands in for a missing one.
func contractID(tree any, defaultID string) (string, error) {
	obj, ok := tree.(map[string]any)
	if !ok {
		return "", errors.New("is not a JSON object")
	}
	raw, present := obj["$id"]
	if !present && defaultID != "" {
		return defaultID, nil
	}
	id, _ := raw.(string)
	id = strings.TrimSuffix(id, "#")
	if err := format.URI(id); err != nil || strings.Contains(id, "#") {
		shown, _ := json.Marshal(raw)
		return "", fmt.Errorf("needs an absolute $id without a fragment, got %s", shown)
	}
	return id, nil
}

func (r *Registry) addNames(d *document, refs []Name) error {
	for _, n := range refs {
		if prev, dup := r.byName[n.Name]; dup {
			return contractError(d.File, "repeats the schema name %q already given to %s", n.Name, prev)
		}
		uri := d.ID + "#" + n.Pointer
		r.byName[n.Name] = uri
		r.named = append(r.named, Named{Name: n.Name, URI: uri, Contract: d.ID})
		d.Schemas++
	}
	return nil
}

// compileAll compiles each contract's root and every named schema, so
// that a broken contract fails at Load, not at its first call.
func (r *Registry) compileAll() error {
	for _, d := range r.docs {
		if err := r.compileInto(d.File, d.ID+"#"); err != nil {
			return err
		}
	}
	for _, n := range r.named {
		if err := r.compileInto(r.byID[n.Contract].File, n.URI); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) compileInto(file, uri string) error {
	if _, done := r.compiled[uri]; done {
		return nil
	}
	s, err := r.compiler.Compile(uri)
	if err != nil {
		return contractError(file, "does not compile: %v", err)
	}
	r.compiled[uri] = &schema{lib: s, fast: r.compileFast(uri)}
	return nil
}

// compileFast compiles the fast path for the canonical reference uri, or
// returns nil when the schema is beyond it. The fast path speaks draft
// 2020-12 only: a contract that declares another draft (upstream MCP
// tools often send draft-07) is left to the library.
func (r *Registry) compileFast(uri string) *fast.Schema {
	id, ptr, _ := strings.Cut(uri, "#")
	d, ok := r.byID[id]
	if !ok {
		return nil
	}
	if draft, ok := member(d.tree, "$schema").(string); ok && strings.TrimSuffix(draft, "#") != draft2020.URI {
		return nil
	}
	s, err := d.fast.Compile(ptr)
	if err != nil {
		return nil
	}
	return s
}

func contractError(file, format string, args ...any) *custody.Error {
	return custody.Errorf(custody.EINVALID, "contract %s %s", file, fmt.Sprintf(format, args...))
}
