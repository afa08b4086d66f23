package contract

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/jsonschema/v6/kind"
)

// Validate checks the exact bytes raw against the schema named by ref. It
// never changes the document: nothing is defaulted, coerced or stripped.
// It returns nil when the document is valid, ENOTFOUND for an unknown ref,
// and EINVALID with Violations when the document is over the size cap, is
// not strict JSON (malformed, invalid UTF-8, a duplicate key) or fails the
// schema.
func (r *Registry) Validate(ref string, raw []byte) error {
	uri, err := r.Resolve(ref)
	if err != nil {
		return err
	}
	sch, err := r.schema(uri)
	if err != nil {
		return err
	}
	if len(raw) > r.maxBytes {
		msg := fmt.Sprintf("document is %d bytes, over the limit of %d", len(raw), r.maxBytes)
		return &custody.Error{Kind: custody.EINVALID, Message: msg, Violations: []custody.Violation{{Message: msg}}}
	}
	if sch.fast != nil && sch.fast.Accepts(raw) {
		return nil
	}
	v, err := strictjson.Decode(raw)
	if err != nil {
		return decodeRefusal(err)
	}
	if err := libValidate(sch.lib, v); err != nil {
		if ce, ok := err.(*custody.Error); ok {
			return ce
		}
		return r.refusal(uri, err)
	}
	return nil
}

// libValidate runs the library, turning a panic inside it into an
// error: a document that trips the library is refused, never let through
// and never allowed to take the process down.
func libValidate(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &custody.Error{Kind: custody.EINVALID, Message: "document could not be validated",
				Violations: []custody.Violation{{Message: "document could not be validated"}}, Err: fmt.Errorf("validator panic: %v", p)}
		}
	}()
	return s.Validate(v)
}

// decodeRefusal reports a document that is not strict JSON.
func decodeRefusal(err error) *custody.Error {
	var de *strictjson.SyntaxError
	if !errors.As(err, &de) {
		return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: err}
	}
	msg := "invalid JSON: " + de.Error()
	return &custody.Error{
		Kind:       custody.EINVALID,
		Message:    msg,
		Violations: []custody.Violation{{Instance: de.Pointer(), Message: msg}},
	}
}

// refusal turns the library's error tree into an EINVALID error with one
// violation per leaf cause.
func (r *Registry) refusal(uri string, err error) *custody.Error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: err}
	}
	vs := r.flatten(ve, nil)
	// The library gathers causes in map order; a refusal is recorded on
	// the ledger, so its violations come out in one order.
	slices.SortStableFunc(vs, func(a, b custody.Violation) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Keyword, b.Keyword), cmp.Compare(a.Message, b.Message))
	})
	msg := fmt.Sprintf("document does not match %s", uri)
	if len(vs) > 0 {
		msg += fmt.Sprintf(": at %q: %s", vs[0].Instance, vs[0].Message)
	}
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return &custody.Error{Kind: custody.EINVALID, Message: msg, Violations: vs}
}

// flatten appends the leaf causes of e to out.
func (r *Registry) flatten(e *jsonschema.ValidationError, out []custody.Violation) []custody.Violation {
	if !isLeaf(e) {
		for _, c := range e.Causes {
			out = r.flatten(c, out)
		}
		return out
	}
	at, kw := strictjson.Pointer(e.InstanceLocation), keywordLocation(e)
	for _, msg := range r.messages(e) {
		out = append(out, custody.Violation{Instance: at, Keyword: kw, Message: msg})
	}
	return out
}

// isLeaf reports whether e is reported as one violation. Besides errors
// without causes, that is a property-names failure (its causes are
// located in the name, not in the document) and a contains failure (its
// causes are the items that did not match, none of which is wrong).
func isLeaf(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames, *kind.Contains, *kind.MinContains:
		return true
	}
	return len(e.Causes) == 0
}

// keywordLocation returns the absolute location of the failing keyword:
// the schema's URI and the keyword's path within it.
func keywordLocation(e *jsonschema.ValidationError) string {
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		return e.SchemaURL + "/not" // the library gives "not" no path
	}
	return e.SchemaURL + strictjson.Pointer(e.ErrorKind.KeywordPath())
}

// messages words a leaf cause: one message per unknown or missing
// property, so that each is named on its own.
func (r *Registry) messages(e *jsonschema.ValidationError) []string {
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		return quoted("additional property %s is not allowed", k.Properties)
	case *kind.Required:
		return quoted("missing required property %s", k.Missing)
	case *kind.PropertyNames:
		var why []string
		for _, c := range e.Causes {
			for _, v := range r.flatten(c, nil) {
				why = append(why, v.Message)
			}
		}
		return []string{fmt.Sprintf("invalid property name %q: %s", k.Property, strings.Join(why, "; "))}
	case *kind.Const:
		return []string{constMessage(k.Want)}
	case *kind.Not:
		return []string{"must not match the 'not' schema"}
	case *kind.Contains:
		return []string{"no item matches the 'contains' schema"}
	case *kind.FalseSchema:
		return []string{falseSchemaMessage(e)}
	}
	return []string{e.ErrorKind.LocalizedString(r.printer)}
}

func quoted(format string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf(format, fmt.Sprintf("%q", n))
	}
	return out
}

// falseSchemaMessage words a failure against a false schema by the
// keyword that holds it: most often an unevaluated or additional
// property or item.
func falseSchemaMessage(e *jsonschema.ValidationError) string {
	last := ""
	if n := len(e.InstanceLocation); n > 0 {
		last = e.InstanceLocation[n-1]
	}
	_, frag, _ := strings.Cut(e.SchemaURL, "#")
	tokens := strings.Split(frag, "/")
	holder, parent := tokens[len(tokens)-1], ""
	if len(tokens) > 1 {
		parent = tokens[len(tokens)-2]
	}
	switch {
	case parent == "properties" || parent == "patternProperties":
		return fmt.Sprintf("property %q is not allowed", last)
	case holder == "unevaluatedProperties":
		return fmt.Sprintf("unevaluated property %q is not allowed", last)
	case holder == "additionalProperties":
		return fmt.Sprintf("additional property %q is not allowed", last)
	case holder == "items":
		return fmt.Sprintf("additional item %s is not allowed", last)
	case holder == "unevaluatedItems":
		return fmt.Sprintf("unevaluated item %s is not allowed", last)
	}
	return "no value is allowed here (the schema is false)"
}

// constMessage shows the value a "const" wants, which the library leaves
// out for objects and arrays.
func constMessage(want any) string {
	raw, err := json.Marshal(want)
	if err != nil {
		return "value must equal the 'const' value"
	}
	if len(raw) > 200 {
		return fmt.Sprintf("value must be %s...", raw[:200])
	}
	return fmt.Sprintf("value must be %s", raw)
}
