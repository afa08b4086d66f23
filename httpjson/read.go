package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("the request body is not the expected JSON: %v", err), Err: err}
	}
	return nil
}
