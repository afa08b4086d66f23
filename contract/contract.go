// Package contract is the JSON Schema registry of custody: it loads the
// contracts it is given and the user's, compiles every schema once
// (draft 2020-12, format assertions on), and validates the exact bytes of
// a document against a schema named by a short name or by contract $id
// plus JSON pointer, reporting structured violations.
//
// The package knows no particular contract. A package that owns one (a
// seed system's tools contract, the gateway's envelope format) hands it
// to Load as a Source that names its own schemas. A user contract
// FILE.json names its root "FILE" and each $defs entry "FILE:DEF".
//
// Each schema is also compiled, when it uses only the keywords typical
// contracts do, into the fast path of package contract/fast, which checks
// the raw bytes in one pass without allocating. It may only accept: a
// document it does not accept is decoded and validated by the library as
// before, so refusals and their violations are the library's.
package contract

import (
	"encoding/json"
	"sync"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract/fast"
	"github.com/pb33f/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// DefaultMaxBytes is the document size cap when Options.MaxBytes is 0.
const DefaultMaxBytes = 1 << 20

// Options says where the contracts come from.
type Options struct {
	// Contracts are the contracts packages own, loaded first and listed
	// in this order.
	Contracts []Source
	// Dir is a user directory: every *.json file in it is a contract.
	Dir string
	// Extra holds more contracts by file name.
	Extra map[string][]byte
	// MaxBytes caps the size of a validated document; 0 means
	// DefaultMaxBytes.
	MaxBytes int
}

// Named is a schema with a short name.
type Named struct {
	// Name is the short name, e.g. "peas:issue_vms_update/input".
	Name string `json:"name"`
	// URI is the canonical reference: contract $id, "#", JSON pointer.
	URI string `json:"uri"`
	// Contract is the $id of the contract that holds the schema.
	Contract string `json:"contract"`
}

// Contract describes one loaded contract document.
type Contract struct {
	// ID is the contract's $id, or the URI it was given when it has none:
	// its file URL for a directory file, urn:custody:contract:NAME for an
	// extra contract.
	ID string `json:"id"`
	// Title is the contract's title, if it has one.
	Title string `json:"title,omitempty"`
	// File is where the contract came from: its Source's file name, the
	// path in the user directory, or the name it was given in Extra.
	File string `json:"file"`
	// Schemas counts the named schemas in the contract.
	Schemas int `json:"schemas"`
}

// Registry holds the compiled contracts. It is safe for concurrent use.
type Registry struct {
	maxBytes int
	docs     []*document
	byID     map[string]*document
	named    []Named
	byName   map[string]string  // short name -> canonical URI
	compiled map[string]*schema // canonical URI -> schema; fixed after Load
	printer  *message.Printer

	mu       sync.Mutex // serializes compiles after Load
	compiler *jsonschema.Compiler
	lazy     sync.Map // canonical URI -> *schema compiled after Load
}

// schema is one compiled schema: the library's, and the fast path's when
// the schema uses only what the fast path implements (else nil).
type schema struct {
	lib  *jsonschema.Schema
	fast *fast.Schema
}

// document is one contract: its exact bytes and their decoded tree.
type document struct {
	Contract
	raw  []byte
	tree any
	fast *fast.Compiler // under Registry.mu after Load
}

// Contracts lists the loaded contracts: Options.Contracts first, then
// the user directory's files and the extra contracts, each in name order.
func (r *Registry) Contracts() []Contract {
	out := make([]Contract, len(r.docs))
	for i, d := range r.docs {
		out[i] = d.Contract
	}
	return out
}

// Named lists every named schema, in contract order.
func (r *Registry) Named() []Named {
	return append([]Named(nil), r.named...)
}

// Document returns the exact bytes of the contract whose $id is id, or
// ENOTFOUND.
func (r *Registry) Document(id string) (json.RawMessage, error) {
	d, ok := r.byID[id]
	if !ok {
		return nil, custody.Errorf(custody.ENOTFOUND, "unknown contract %q (run 'custody contracts' to list them)", id)
	}
	return append(json.RawMessage(nil), d.raw...), nil
}

// newPrinter returns the printer the library renders its messages with.
func newPrinter() *message.Printer { return message.NewPrinter(language.English) }
