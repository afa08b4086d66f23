package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// TestEventCapped: an event is the bytes between blank lines, less the
// line ends, whichever line ends the stream uses; one of max bytes is
// read, one of max+1 cuts the stream, however the reads split it.
func TestEventCapped(t *testing.T) {
	const max = 10
	for _, tc := range []struct {
		name, stream string
		cut          bool
	}{
		{"AtTheCap", "data: 1234\n\n", false},
		{"OverTheCap", "data: 12345\n\n", true},
		{"EventsApart", "data: 1234\n\ndata: 1234\n\ndata: 1234\n\n", false},
		{"LinesOfOneEvent", "data: 1\ndata: 2\n\n", true},
		{"CRLF", "data: 1234\r\n\r\ndata: 1234\r\n\r\n", false},
		{"CR", "data: 1234\r\rdata: 1234\r\r", false},
		{"CRLFOver", "data: 12\r\ndata\r\n\r\n", true},
		{"NoBlankLine", "data: 1234\ndata: 1234\n", true},
	} {
		for _, chunk := range []int{1, 3, 1 << 10} {
			e := &eventCapped{ReadCloser: io.NopCloser(&chunked{r: strings.NewReader(tc.stream), n: chunk}), max: max, empty: true}
			_, err := io.ReadAll(e)
			if cut := errors.Is(err, errEventTooLarge); cut != tc.cut || (err != nil && !cut) {
				t.Errorf("%s, reads of %d: err %v, want cut %v", tc.name, chunk, err, tc.cut)
			}
		}
	}
}

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestSSEEventOverTheCapNotReadWhole: an answer larger than custody reads
// of one message, from a server on the legacy SSE transport, whose every
// answer comes on one event stream, cuts that stream: the call fails,
// custody does not read the answer whole (the server's write fails), and
// the next call gets a new session.
func TestSSEEventOverTheCapNotReadWhole(t *testing.T) {
	// Larger than the cap and what loopback's socket buffers can hold
	// (up to 4 MiB sent and 32 MiB received), so that the server's write
	// fails once custody stops reading.
	const big = 64 << 20
	server := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	addEcho(server, defaultDescription)
	mcp.AddTool(server, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", big)}}}, nil, nil
	})
	var counter writeCounter
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(counter.wrap(h))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired, MaxResultBytes: 2 * big}
	s := openSet(t, Config{Servers: []Server{{Name: "b", URL: srv.URL, SSE: true}}, Governance: Governance{"b__*": read}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := s.mcpHandler("b", "big", 2*big)(ctx, custody.Call{Tool: "b__big", Args: json.RawMessage(`{}`)})
	if err == nil {
		t.Fatalf("an answer of %d bytes on the event stream was read: %d bytes", big, len(out))
	}
	counter.wantCut(t, big)
	out, err = s.mcpHandler("b", "echo", DefaultMaxResultBytes)(ctx, custody.Call{Args: json.RawMessage(`{"message":"after"}`)})
	if err != nil || !bytes.Contains(out, []byte("after")) {
		t.Fatalf("the next call: %s %v", out, err)
	}
}

// TestEventCappedCountsNotifications: the progress and log notifications
// of an event stream are counted as they are read, whatever the line
// ends and however the reads split them; answers, requests, other
// notifications and data too large to be one are not.
func TestEventCappedCountsNotifications(t *testing.T) {
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`
	stream := "event: message\ndata: " + progress + "\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"method\":\"notifications/progress\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"notifications/progress\"}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" + strings.Repeat("y", maxNoteBytes) + "\"}}\n\n" +
		": a comment\n\n" +
		"data: " + progress + "\r\r"
	for _, chunk := range []int{1, 7, 1 << 20} {
		var order relayOrder
		e := &eventCapped{ReadCloser: io.NopCloser(&chunked{r: strings.NewReader(stream), n: chunk}), max: maxMessageBytes, empty: true, order: &order}
		if _, err := io.ReadAll(e); err != nil {
			t.Fatalf("reads of %d: %v", chunk, err)
		}
		if n := order.mark(); n != 3 {
			t.Errorf("reads of %d: %d notifications counted, want 3", chunk, n)
		}
	}
}
