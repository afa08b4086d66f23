// Package draft2020 configures the JSON Schema library as the contract
// registry runs it: draft 2020-12, the RFC-exact format checkers of
// package format, and no document fetched over the network. The registry
// and the fast path's tests build their compilers here, so that both
// check against one configuration.
package draft2020

import (
	"errors"
	"fmt"

	// The pb33f fork is santhosh-tekuri/jsonschema v6.0.3 plus two fixes
	// that matter for violations: instance locations of propertyNames and
	// contentSchema errors no longer alias a shared slice (under an array
	// the upstream reports /1 for a failure at /0), and flattened output
	// keeps every cause behind a $ref instead of the first. The API is the
	// same, so switching back is a one-line import change.
	"github.com/pb33f/jsonschema/v6"

	"github.com/custody-dev/custody/contract/internal/format"
)

// URI is the meta-schema URI of draft 2020-12, which every bundle
// declares.
const URI = "https://json-schema.org/draft/2020-12/schema"

// NewCompiler returns the compiler every contract goes through, so that
// the conformance test runs exactly the product's configuration: draft
// 2020-12 for schemas that declare no $schema, RFC-exact "date-time",
// "uri", "uri-reference" and "uuid" checkers, and loader as the only source of
// documents that are not added as resources (nil: none; schemas are never
// fetched over the network).
//
// With assertFormats set, "format" is an assertion, as the registry
// always uses it. Unset, it is the specification's default for 2020-12:
// an annotation unless a meta-schema requires the format-assertion
// vocabulary. The conformance test needs the default to run the required
// suite, whose format.json expects annotation-only behaviour.
func NewCompiler(loader jsonschema.URLLoader, assertFormats bool) *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if assertFormats {
		c.AssertFormat()
	}
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: stringFormat(format.DateTime)})
	c.RegisterFormat(&jsonschema.Format{Name: "uri", Validate: stringFormat(format.URI)})
	c.RegisterFormat(&jsonschema.Format{Name: "uri-reference", Validate: stringFormat(format.URIReference)})
	c.RegisterFormat(&jsonschema.Format{Name: "uuid", Validate: stringFormat(format.UUID)})
	if loader == nil {
		loader = noLoader{}
	}
	c.UseLoader(loader)
	return c
}

// stringFormat adapts a string checker to the library: a format applies
// to strings only, and every other type passes.
func stringFormat(check func(string) error) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		return check(s)
	}
}

// noLoader refuses every document that was not added as a contract.
type noLoader struct{}

// Load implements jsonschema.URLLoader.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: %w", url, errNotContract)
}

var errNotContract = errors.New("not a loaded contract (schemas are never fetched over the network)")
