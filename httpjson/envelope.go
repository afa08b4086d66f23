package httpjson

import (
	"bytes"
	"encoding/json"
)

// CheckEnvelope checks the JSON body data with check (the strict checker
// every door uses), except inside the value of the member at path (the
// arguments of a tool call, which the gateway judges and refuses with a
// ledger entry: a refusal of an agent's call is evidence too). It returns
// check's error for data unless the same body with that value replaced
// by {} passes check: then data is as strict as any body outside that
// value, and the value goes on as it is. Read leniently to find the
// value, two members of one name are never resolved here: the body with
// the value replaced still holds both, and check refuses it.
func CheckEnvelope(data []byte, check func([]byte) error, path ...string) error {
	err := check(data)
	if err == nil || len(path) == 0 {
		return err
	}
	start, end, ok := valueSpan(json.NewDecoder(bytes.NewReader(data)), path)
	if !ok {
		return err
	}
	envelope := make([]byte, 0, len(data)-(end-start)+2)
	envelope = append(append(append(envelope, data[:start]...), "{}"...), data[end:]...)
	if check(envelope) != nil {
		return err
	}
	return nil
}

// valueSpan returns where the value at path in the object dec reads starts
// and ends; false when there is none or dec cannot read its way there.
func valueSpan(dec *json.Decoder, path []string) (start, end int, ok bool) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		if name == path[0] && len(path) > 1 {
			return valueSpan(dec, path[1:])
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if name == path[0] {
			end = int(dec.InputOffset())
			start, ok = end-len(raw), true
		}
	}
	return start, end, ok
}
