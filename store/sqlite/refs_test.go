package sqlite

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestParseRefs: the plain reader agrees with encoding/json on what it
// reads, and hands everything else to it.
func TestParseRefs(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"a":"1"}`, `{"a":"1","b":"x y"}`, `{"a":"caf\u00e9"}`, `{"a":"\"q\""}`, `{"a":"1","a":"2"}`,
		`{"a":"1",}`, `{"a":1}`, `nope`, `null`, `{"a":"1"} `, `{"é":"ü"}`, `{"a" :"1"}`, `{"a":"1"`,
	} {
		got, err := parseRefs(in)
		var want map[string]string
		werr := json.Unmarshal([]byte(in), &want)
		if (err == nil) != (werr == nil) || (err == nil && !maps.Equal(got, want)) {
			t.Errorf("parseRefs(%s) = %v, %v; encoding/json: %v, %v", in, got, err, want, werr)
		}
	}
}

func FuzzParseRefs(f *testing.F) {
	f.Add(`{"a":"1","b":"2"}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseRefs(in)
		var want map[string]string
		werr := json.Unmarshal([]byte(in), &want)
		if (err == nil) != (werr == nil) || (err == nil && !maps.Equal(got, want)) {
			t.Errorf("parseRefs(%q) = %v, %v; encoding/json: %v, %v", in, got, err, want, werr)
		}
	})
}

// BenchmarkParseRefs compares reading a typical refs column with the
// plain reader and with encoding/json, in the same run.
func BenchmarkParseRefs(b *testing.B) {
	col := `{"approval_request_id":"ap-00001234","note_id":"00001234"}`
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseRefs(col); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var refs map[string]string
			if err := json.Unmarshal([]byte(col), &refs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
