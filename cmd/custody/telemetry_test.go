package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/otlptest"
)

// TestServeTracesCalls checks that with an OTLP endpoint configured every
// gateway call is exported as a span with its stages under it, and that a
// caller's traceparent makes it a child of the caller's span.
func TestServeTracesCalls(t *testing.T) {
	rcv := otlptest.New(t)
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}, "--data", data)
	agent := readToken(t, filepath.Join(data, agentTokenFile))

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", base+"/v1/calls", strings.NewReader(`{"tool":"get_time","arguments":{"zone":"UTC"}}`))
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("call: %d %s", res.StatusCode, body)
	}
	var result struct {
		Receipt struct{ Seq int64 } `json:"receipt"`
	}
	if err := json.Unmarshal(body, &result); err != nil {
		t.Fatal(err)
	}
	// A call without a traceparent starts a trace of its own.
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{}}`, 200)
	if code := stop(); code != exitOK {
		t.Fatalf("exit code %d", code)
	}

	var calls, children int
	var continued string
	for _, sp := range rcv.Spans() {
		if sp.GetName() != gate.SpanCall {
			continue
		}
		calls++
		if otlptest.Hex(sp.GetTraceId()) != traceID {
			continue
		}
		continued = otlptest.Hex(sp.GetSpanId())
		if got := otlptest.Hex(sp.GetParentSpanId()); got != parentID {
			t.Errorf("the call span's parent is %s, want the caller's %s", got, parentID)
		}
		if got := otlptest.Attr(sp, gate.AttrTool); got != "get_time" {
			t.Errorf("tool %q", got)
		}
		if got := otlptest.Attr(sp, gate.AttrOutcome); got != gate.OutcomeSucceeded {
			t.Errorf("outcome %q", got)
		}
		if got := otlptest.Attr(sp, gate.AttrSeq); got != strconv.FormatInt(result.Receipt.Seq, 10) {
			t.Errorf("seq %q, want the receipt's %d", got, result.Receipt.Seq)
		}
	}
	for _, sp := range rcv.Spans() {
		if continued != "" && otlptest.Hex(sp.GetParentSpanId()) == continued {
			children++
		}
	}
	if calls != 2 {
		t.Errorf("%d call spans exported, want 2", calls)
	}
	if continued == "" {
		t.Fatalf("no call span continues the caller's trace %s", traceID)
	}
	if children < 4 {
		t.Errorf("%d stage spans under the call, want validate, approve, run, record", children)
	}
}
