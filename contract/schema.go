package contract

import (
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
)

// Schema is one JSON Schema compiled on its own, outside any registry: a
// schema written at run time (an operator's grant) rather than loaded
// with the contracts. It is safe for concurrent use.
type Schema struct {
	sch *schema
	r   *Registry
	uri string
}

// Compile compiles raw, a JSON Schema (draft 2020-12 unless it says
// otherwise, formats asserted as the registry asserts them) that refers
// to no other document. It returns EINVALID, naming the problem, when raw
// is not strict JSON, not a schema object, or does not compile.
func Compile(uri string, raw []byte) (*Schema, error) {
	tree, err := strictjson.DecodeExact(raw)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "the schema is not valid JSON: %v", err)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, custody.Errorf(custody.EINVALID, "the schema must be a JSON object")
	}
	c := draft2020.NewCompiler(nil, true)
	if err := c.AddResource(uri, tree); err != nil {
		return nil, custody.Errorf(custody.EINVALID, "the schema cannot be added: %v", err)
	}
	lib, err := c.Compile(uri)
	if err != nil {
		return nil, &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("the schema does not compile: %v", err), Err: err}
	}
	r := &Registry{maxBytes: DefaultMaxBytes, printer: newPrinter()}
	return &Schema{sch: &schema{lib: lib}, r: r, uri: uri}, nil
}

// Validate checks the exact bytes raw against the schema, as
// Registry.Validate does: nil when valid, EINVALID with violations when
// not (or when raw is not strict JSON or over DefaultMaxBytes).
func (s *Schema) Validate(raw []byte) error {
	if len(raw) > s.r.maxBytes {
		msg := fmt.Sprintf("document is %d bytes, over the limit of %d", len(raw), s.r.maxBytes)
		return &custody.Error{Kind: custody.EINVALID, Message: msg, Violations: []custody.Violation{{Message: msg}}}
	}
	v, err := strictjson.Decode(raw)
	if err != nil {
		return decodeRefusal(err)
	}
	if err := libValidate(s.sch.lib, v); err != nil {
		if ce, ok := err.(*custody.Error); ok {
			return ce
		}
		return s.r.refusal(s.uri, err)
	}
	return nil
}
