package httpjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/custody-dev/custody"
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

// decodeExact decodes the strict document data into v, refusing a
// member that is not spelt as one of v's fields or that v does not have.
func decodeExact(data []byte, v any) error {
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
