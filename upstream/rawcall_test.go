package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawOf returns c's raw connection, failing the test when custody does
// not send its own calls on it.
func rawOf(t *testing.T, c *Conn) *rawConn {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == nil {
		t.Fatal("the stdio session has no raw connection")
	}
	return c.raw
}

// TestRawCallMatchesSDK makes the same calls through custody's own
// tools/call and through an SDK client session of the same server: the
// results decode alike, and custody's are the server's bytes.
func TestRawCallMatchesSDK(t *testing.T) {
	srv := stdioServer("raw", nil)
	c := dial(t, srv, ConnOptions{})
	raw := rawOf(t, c)
	if raw.version != statelessVersion {
		t.Errorf("negotiated %q with a go-sdk server, want %s (whose requests carry the client in _meta)", raw.version, statelessVersion)
	}
	cmd := exec.Command(srv.Command)
	cmd.Env = append(os.Environ(), envChild+"="+childServe)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	for _, tc := range []struct{ tool, args string }{
		{"echo", `{"message":"hello"}`},
		{"echo", `{"message":"ünïcode \u2028 <b>"}`},
		{"fail", `{}`},
		{"where", `{}`},
	} {
		sent := raw.next.Load()
		got, err := c.Call(ctx, tc.tool, json.RawMessage(tc.args), nil)
		if err != nil {
			t.Fatalf("%s through custody: %v", tc.tool, err)
		}
		if raw.next.Load() != sent+1 {
			t.Errorf("%s: custody did not send the call itself", tc.tool)
		}
		res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatalf("%s directly: %v", tc.tool, err)
		}
		want, _ := json.Marshal(res)
		var decoded mcp.CallToolResult
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("%s: custody's result does not decode: %v: %s", tc.tool, err, got)
		}
		again, _ := json.Marshal(&decoded)
		if tc.tool == "where" {
			// where reports the process, which differs: compare the shape.
			if !strings.Contains(string(again), `"structuredContent"`) || !strings.Contains(string(want), `"structuredContent"`) {
				t.Errorf("where: %s against %s", again, want)
			}
			continue
		}
		if string(again) != string(want) {
			t.Errorf("%s: through custody %s, directly %s", tc.tool, again, want)
		}
	}
}

// TestRawCallCancelled cancels a call custody sent itself: the server is
// told and stops, the caller gets the context's error, and the next call
// on the session works.
func TestRawCallCancelled(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "cancelled")
	c := dial(t, stdioServer("raw", map[string]string{envCancelled: flag}), ConnOptions{})
	rawOf(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "block", json.RawMessage(`{}`), nil)
		done <- err
	}()
	waitFor(t, "the call to be in flight", func() bool {
		raw := rawOf(t, c)
		raw.mu.Lock()
		defer raw.mu.Unlock()
		return len(raw.waiting) == 1
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	waitFor(t, "the server to see the cancellation", func() bool {
		_, err := os.Stat(flag)
		return err == nil
	})
	if r := call(t, c, "echo", `{"message":"after"}`); !strings.Contains(string(r.StructuredContent), "after") {
		t.Errorf("the call after a cancelled one: %+v", r)
	}
}

// TestRawCallServerCrash: a server that dies with custody's call in
// flight leaves its outcome unknown, and the session is restarted.
func TestRawCallServerCrash(t *testing.T) {
	c := dial(t, stdioServer("raw", nil), ConnOptions{})
	rawOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Call(ctx, "crash", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "outcome") && !strings.Contains(err.Error(), "broke") {
		t.Fatalf("call that crashed its server: %v", err)
	}
	if r := call(t, c, "echo", `{"message":"back"}`); !strings.Contains(string(r.StructuredContent), "back") {
		t.Errorf("after the restart: %+v", r)
	}
}

// toolResultSeeds are results of every shape the SDK decodes or refuses.
var toolResultSeeds = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[],"structuredContent":{"a":1},"isError":false,"_meta":{"k":"v"}}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"x"}}]}`,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":3}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"1","content":[{"type":"text","text":"x"}]}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"1","content":[{"type":"tool_use","id":"x"}]}]}`,
	`{"content":[{"type":"video"}]}`,
	`{"content":[null]}`,
	`{"content":null}`,
	`{"structuredContent":{"a":1}}`,
	`{"Content":[{"type":"video"}]}`,
	`{"content":[{"type":"text","Text":"x","TYPE":"video"}]}`,
	`{"content":"text"}`,
	`{"content":[{"type":"text","annotations":{"priority":"high"}}]}`,
	`{"content":[{"type":"text","icons":[{"src":1}]}]}`,
	`{"isError":"yes","content":[]}`,
	`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}}}`,
	`{"resultType":"complete","content":[]}`,
	`[]`, `null`, `"x"`, `{}`,
	`{"content":[` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `]}`,
	`{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, 999) + `1` + strings.Repeat(`}`, 999) + `}`,
}

// FuzzToolResult holds toolResult's verdict on a result to the SDK's: it
// refuses exactly what the SDK refuses, returns the server's bytes only
// where its content is a list, and anything else as the SDK encodes it.
func FuzzToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !segjson.Valid(data) || !json.Valid(data) {
			// A result reaches custody as one JSON value.
			return
		}
		got, err := toolResult(data)
		if errors.Is(err, errNeedsInput) {
			return // the SDK's path makes the call again
		}
		var sdk mcp.CallToolResult
		sdkErr := json.Unmarshal(data, &sdk)
		if (err == nil) != (sdkErr == nil) {
			t.Fatalf("%s: custody %v, the SDK %v", data, err, sdkErr)
		}
		if err != nil {
			return
		}
		if string(got) != string(data) {
			want, _ := json.Marshal(&sdk)
			if string(got) != string(want) {
				t.Fatalf("%s: returned %s, not the SDK's %s", data, got, want)
			}
			return
		}
		if sdk.Content == nil {
			t.Fatalf("%s: returned as sent, without a content list", data)
		}
	})
}
