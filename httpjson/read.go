package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// exactMembers refuses a member of the object data that is not spelt
// exactly as a field of the struct v points to: encoding/json matches
// names regardless of case and lets the last of "tier" and "TIER" win,
// where the strict check sees two names.
func exactMembers(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return nil // not an object: the decoder says so
	}
	names := map[string]bool{}
	for f := range t.Elem().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	for m := range members {
		if !names[m] {
			return custody.Errorf(custody.EINVALID, "unknown member %q in the request body", m)
		}
	}
	return nil
}

// Read decodes the JSON body of r, at most max bytes, into v, as strictly
// as every other door reads: the body must be one document the ledger's
// strict checker accepts (no duplicate members, valid UTF-8, nothing
// after it, ...), and its members must be v's. Every refusal is an
// EINVALID error saying what, and where for a document that is not
// strict; a body over max is refused without reading past it.
func Read(r *http.Request, max int64, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "the request body could not be read", Err: err}
	}
	if int64(len(data)) > max {
		return custody.Errorf(custody.EINVALID, "the request body is larger than %d bytes", max)
	}
	if err := ledger.Check(data); err != nil {
		var se *ledger.SyntaxError
		if errors.As(err, &se) {
			return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: at byte %d: %s", se.Offset, se.Msg)
		}
		return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: %v", err)
	}
	if err := exactMembers(data, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("the request body is not the expected JSON: %v", err), Err: err}
	}
	return nil
}
