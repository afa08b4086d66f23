package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioStreams are what a server may write on stdout: well-formed
// messages, batches, and the malformed input each reader must refuse
// alike.
var stdioStreams = map[string]string{
	"Messages": `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad","data":{"k":1}}}` + "\n",
	"Blank lines":      "\n\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n\n",
	"Across lines":     "{\"jsonrpc\":\"2.0\",\n \"id\":1,\n \"result\":{}}\n",
	"Batch":            `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]` + "\n",
	"Empty batch":      "[]\n",
	"Trailing data":    `{"jsonrpc":"2.0","id":1,"result":{}} x` + "\n",
	"Two on a line":    `{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":2,"result":{}}` + "\n",
	"Garbage":          "this is not JSON-RPC\n",
	"Wrong version":    `{"jsonrpc":"1.0","id":1,"result":{}}` + "\n",
	"No id":            `{"jsonrpc":"2.0","result":{}}` + "\n",
	"Float id":         `{"jsonrpc":"2.0","id":1.5,"result":{}}` + "\n",
	"Object id":        `{"jsonrpc":"2.0","id":{},"result":{}}` + "\n",
	"Empty method":     `{"jsonrpc":"2.0","id":1,"method":""}` + "\n",
	"Number method":    `{"jsonrpc":"2.0","id":1,"method":7}` + "\n",
	"Case":             `{"JSONRPC":"2.0","ID":1,"Result":{}}` + "\n",
	"Unicode":          `{"jsonrpc":"2.0","id":"\u00e9","result":{"t":"\u2028<&>"}}` + "\n",
	"Cut short":        `{"jsonrpc":"2.0","id":1,"res`,
	"Deep":             `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}\n",
	"Error not object": `{"jsonrpc":"2.0","id":1,"error":"no"}` + "\n",
}

// readAll reads messages off conn until an error, as text.
func readAll(t *testing.T, conn mcp.Connection) []string {
	t.Helper()
	var out []string
	for len(out) < 100 {
		msg, err := conn.Read(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF // both name the stream's end alike
			}
			return append(out, "error: "+fmt.Sprint(err != nil && !errors.Is(err, io.EOF), errors.Is(err, io.EOF)))
		}
		out = append(out, fmt.Sprintf("%T %s", msg, describe(msg)))
	}
	return out
}

// describe renders a message with its raw members compacted, so that
// the two readers' messages compare by content.
func describe(msg jsonrpc.Message) string {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		return fmt.Sprintf("%v %q %s", m.ID.Raw(), m.Method, compact(m.Params))
	case *jsonrpc.Response:
		var e string
		if m.Error != nil {
			b, _ := json.Marshal(m.Error)
			e = string(b)
		}
		return fmt.Sprintf("%v %s %s", m.ID.Raw(), compact(m.Result), e)
	}
	return "?"
}

func compact(raw json.RawMessage) string {
	var b strings.Builder
	if len(raw) == 0 {
		return "-"
	}
	enc := json.NewEncoder(&b)
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "invalid " + string(raw)
	}
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// TestStdioConnMatchesSDK reads the same streams with custody's stdio
// connection and the SDK's: the same messages, and an error at the same
// place.
func TestStdioConnMatchesSDK(t *testing.T) {
	for name, stream := range stdioStreams {
		t.Run(name, func(t *testing.T) {
			sdk, err := (&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(stream)), Writer: nopWriter{}}).Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer sdk.Close()
			ours := newStdioConn(strings.NewReader(stream), nopWriter{})
			defer ours.Close()
			want, got := readAll(t, sdk), readAll(t, ours)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("custody read\n%s\nthe SDK\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestStdioConnRefusesBatchesOnNewRevisions: from 2025-06-18 a batch
// ends the session, as it does on the SDK's connection.
func TestStdioConnRefusesBatchesOnNewRevisions(t *testing.T) {
	c := newStdioConn(strings.NewReader(stdioStreams["Batch"]), nopWriter{})
	defer c.Close()
	c.setVersion("2025-11-25")
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "batching is not supported") {
		t.Fatalf("a batch on 2025-11-25: %v", err)
	}
}

// TestStdioConnAnswersBatches: the responses to a batch of requests go
// back as one batch once all are written.
func TestStdioConnAnswersBatches(t *testing.T) {
	in := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
	var out strings.Builder
	c := newStdioConn(strings.NewReader(in), writeCloser{&out})
	defer c.Close()
	for range 2 {
		msg, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		id := msg.(*jsonrpc.Request).ID
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if id.Raw() == float64(1) && out.Len() != 0 {
			t.Fatalf("wrote %q before the batch was answered", out.String())
		}
	}
	if got := out.String(); got != `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`+"\n" {
		t.Errorf("wrote %q", got)
	}
}

// FuzzDecodeMessage holds decodeMessage to jsonrpc.DecodeMessage.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range stdioStreams {
		for _, line := range strings.Split(s, "\n") {
			f.Add([]byte(line))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeMessage(data)
		want, wantErr := jsonrpc.DecodeMessage(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: custody %v, the SDK %v", data, err, wantErr)
		}
		if err == nil && describe(got) != describe(want) {
			t.Fatalf("%q: custody %s, the SDK %s", data, describe(got), describe(want))
		}
		if err == nil && reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Fatalf("%q: custody %T, the SDK %T", data, got, want)
		}
	})
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriter) Close() error                { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
