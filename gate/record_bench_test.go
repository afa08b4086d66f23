package gate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// markedBody is the call.succeeded body as a document for json.Marshal.
type markedBody struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	ElapsedUS int64           `json:"elapsed_us"`
}

// BenchmarkBody compares building a call.succeeded body by hand with
// json.Marshal of the same document, in the same run.
func BenchmarkBody(b *testing.B) {
	f := &flight{Call: custody.Call{Tool: "notes_write", Args: json.RawMessage(`{"title":"bench","text":"a note written by the benchmark"}`)}, argsOK: true, elapsed: 1234 * time.Microsecond}
	out := json.RawMessage(`{"note_id":"00001234","written":true}`)
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			body := f.bodyStart(make([]byte, 0, 96+len(f.Args)+len(out)))
			body = append(body, `,"output":`...)
			body = append(body, out...)
			body = appendElapsed(body, f.elapsed)
			_ = append(body, '}')
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(markedBody{f.Tool, f.Args, out, f.elapsed.Microseconds()}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLookup compares reading a ref out of a tool's output in place
// with finding it by decoding (lookupByDecoding), in the same run.
func BenchmarkLookup(b *testing.B) {
	out := json.RawMessage(`{"note_id":"00001234","title":"bench","text":"a note written by the benchmark","written":true}`)
	for _, v := range []struct {
		name string
		find func(json.RawMessage, string) (json.RawMessage, bool)
	}{{"in-place", lookup}, {"decoding", lookupByDecoding}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := v.find(out, "/written"); !ok {
					b.Fatal("no ref")
				}
			}
		})
	}
}
