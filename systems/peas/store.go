package peas

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
)

// getDoc reads the document ns/key into v. ENOTFOUND passes through with
// what names the missing thing.
func (s *System) getDoc(ctx context.Context, ns, key, what string, v any) error {
	raw, err := s.d.State.State(ctx, ns, key)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return custody.Errorf(custody.ENOTFOUND, "no %s %q", what, key)
	}
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "state store unavailable", Err: fmt.Errorf("read %s/%s: %w", ns, key, err)}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("decode %s/%s: %w", ns, key, err)}
	}
	return nil
}

// putDoc writes v as the document ns/key.
func (s *System) putDoc(ctx context.Context, ns, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("encode %s/%s: %w", ns, key, err)}
	}
	if err := s.d.State.PutState(ctx, ns, key, raw); err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "state store unavailable", Err: fmt.Errorf("write %s/%s: %w", ns, key, err)}
	}
	return nil
}

// listDocs decodes every document of ns with decode.
func (s *System) listDocs(ctx context.Context, ns string, decode func(key string, raw json.RawMessage) error) error {
	docs, err := s.d.State.States(ctx, ns)
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "state store unavailable", Err: fmt.Errorf("list %s: %w", ns, err)}
	}
	for k, raw := range docs {
		if err := decode(k, raw); err != nil {
			return fmt.Errorf("decode %s/%s: %w", ns, k, err)
		}
	}
	return nil
}

// decodeArgs decodes tool arguments that passed the input contract. The
// contract counts 1800.0 and 3e2 as integers, so integral numbers are read
// as integers whatever their spelling: an argument the contract accepted
// never fails here after its approval was spent on it.
func decodeArgs(call custody.Call, v any) error {
	return decodeJSON(call.Args, "arguments", v)
}

// decodeJSON decodes doc into v, integral numbers read as integers; what
// names doc in the error.
func decodeJSON(doc []byte, what string, v any) error {
	norm, err := integralNumbers(doc)
	if err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: what + " do not decode", Err: err}
	}
	if err := json.Unmarshal(norm, v); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: what + " do not decode", Err: err}
	}
	return nil
}

// output encodes a tool output.
func output(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return raw, nil
}
