package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/custody-dev/custody/internal/otlptest"
	"github.com/custody-dev/custody/telemetry"
)

// clearEnv empties the exporter's process environment for the test, so
// that only what the test passes selects the endpoint.
func clearEnv(t *testing.T) {
	for _, k := range []string{telemetry.EnvTracesEndpoint, telemetry.EnvEndpoint,
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

func TestEndpointMore(t *testing.T) {
	tests := []struct {
		name, explicit, traces, base string
		want                         string
		errNames                     string // what the error names; "" when none
	}{
		{name: "OKTrimmed", explicit: "  http://c:4318  ", want: "http://c:4318/v1/traces"},
		{name: "OKBlankExplicitFallsBack", explicit: "   ", base: "http://b:1", want: "http://b:1/v1/traces"},
		{name: "OKBlankTracesFallsBack", traces: " ", base: "http://b:1", want: "http://b:1/v1/traces"},
		{name: "OKTracesWinsOverBase", traces: "http://t:1/v1/traces", base: "http://b:1", want: "http://t:1/v1/traces"},
		{name: "OKTracesKeptWithoutSuffix", traces: "https://t/ingest/", want: "https://t/ingest/"},
		{name: "OKBaseQueryKept", base: "http://b:1/p?tenant=a", want: "http://b:1/p/v1/traces?tenant=a"},
		{name: "OKBaseFullPathNotDoubled", base: "http://b:1/v1/traces", want: "http://b:1/v1/traces"},
		{name: "OKHTTPS", explicit: "https://c", want: "https://c/v1/traces"},
		{name: "ErrExplicitNoHost", explicit: "http://", errNames: "endpoint"},
		{name: "ErrExplicitScheme", explicit: "grpc://c:4317", errNames: "endpoint"},
		{name: "ErrExplicitParse", explicit: "http://[::1", errNames: "endpoint"},
		{name: "ErrTracesNoScheme", traces: "t:4318", errNames: telemetry.EnvTracesEndpoint},
		{name: "ErrBaseScheme", base: "unix:///run/otel.sock", errNames: telemetry.EnvEndpoint},
		{name: "ErrBaseNotReachedWhenTracesBad", traces: "ftp://t", base: "http://b:1", errNames: telemetry.EnvTracesEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{telemetry.EnvTracesEndpoint: tt.traces, telemetry.EnvEndpoint: tt.base}
			got, err := telemetry.Endpoint(tt.explicit, func(k string) string { return env[k] })
			if tt.errNames != "" {
				if err == nil || got != "" || !strings.Contains(err.Error(), tt.errNames) {
					t.Fatalf("Endpoint = %q, %v; want an error naming %s", got, err, tt.errNames)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Endpoint = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestEndpointProcessEnvironment: a nil getenv reads the process
// environment.
func TestEndpointProcessEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv(telemetry.EnvEndpoint, "http://env:4318")
	if got, err := telemetry.Endpoint("", nil); err != nil || got != "http://env:4318/v1/traces" {
		t.Errorf("Endpoint(nil getenv) = %q, %v", got, err)
	}
}

func TestNewProviderOff(t *testing.T) {
	clearEnv(t)
	tp, shutdown, err := telemetry.NewProvider(context.Background(), "", func(string) string { return "" })
	if err != nil || tp != nil || shutdown == nil {
		t.Fatalf("NewProvider with no endpoint = %v, %v, %v; want nil, a shutdown, nil", tp, shutdown != nil, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Errorf("shutdown of no provider = %v", err)
	}
}

func TestNewProviderBadEndpoint(t *testing.T) {
	clearEnv(t)
	tp, shutdown, err := telemetry.NewProvider(context.Background(), "", func(k string) string {
		if k == telemetry.EnvEndpoint {
			return "collector:4318"
		}
		return ""
	})
	if err == nil || tp != nil || shutdown != nil || !strings.Contains(err.Error(), telemetry.EnvEndpoint) {
		t.Fatalf("NewProvider = %v, %v; want an error naming %s", tp, err, telemetry.EnvEndpoint)
	}
}

// TestNewProviderExports sends spans to a real OTLP/HTTP receiver, the
// endpoint given each way NewProvider takes it; shutdown flushes them.
func TestNewProviderExports(t *testing.T) {
	for _, how := range []string{"Explicit", "Base", "Traces"} {
		t.Run(how, func(t *testing.T) {
			clearEnv(t)
			rcv := otlptest.New(t)
			env := map[string]string{}
			explicit := ""
			switch how {
			case "Explicit":
				explicit = rcv.URL
			case "Base":
				env[telemetry.EnvEndpoint] = rcv.URL
			case "Traces":
				env[telemetry.EnvTracesEndpoint] = rcv.URL + "/v1/traces"
				env[telemetry.EnvEndpoint] = "http://127.0.0.1:1" // not used
			}
			tp, shutdown, err := telemetry.NewProvider(context.Background(), explicit, func(k string) string { return env[k] })
			if err != nil || tp == nil {
				t.Fatalf("NewProvider = %v, %v", tp, err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "gateway.call",
				trace.WithAttributes(attribute.String("tool", "detect"), attribute.Int("attempt", 2)))
			span.End()
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown = %v", err)
			}
			spans := rcv.Spans()
			if len(spans) != 1 {
				t.Fatalf("received %d spans, want 1", len(spans))
			}
			sp := spans[0]
			if sp.GetName() != "gateway.call" || otlptest.Attr(sp, "tool") != "detect" || otlptest.Attr(sp, "attempt") != "2" {
				t.Errorf("span %s tool=%q attempt=%q", sp.GetName(), otlptest.Attr(sp, "tool"), otlptest.Attr(sp, "attempt"))
			}
			if got, want := otlptest.Hex(sp.GetTraceId()), span.SpanContext().TraceID().String(); got != want {
				t.Errorf("trace id %s, want %s", got, want)
			}
		})
	}
}

// TestShutdownReportsFlushFailure: a flush that cannot finish is an error
// naming where the spans were going.
func TestShutdownReportsFlushFailure(t *testing.T) {
	clearEnv(t)
	rcv := otlptest.New(t)
	tp, shutdown, err := telemetry.NewProvider(context.Background(), rcv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "lost")
	span.End()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = shutdown(ctx)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), rcv.URL+"/v1/traces") {
		t.Fatalf("shutdown(canceled) = %v; want context.Canceled naming %s/v1/traces", err, rcv.URL)
	}
}

func TestContinue(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	tests := []struct {
		name, traceparent, tracestate string
		valid                         bool
		state                         string
	}{
		{name: "OKSampled", traceparent: "00-" + traceID + "-" + spanID + "-01", valid: true},
		{name: "OKUnsampled", traceparent: "00-" + traceID + "-" + spanID + "-00", valid: true},
		{name: "OKState", traceparent: "00-" + traceID + "-" + spanID + "-01", tracestate: "vendor=x", valid: true, state: "vendor=x"},
		{name: "ErrNone"},
		{name: "ErrMalformed", traceparent: "00-zz-" + spanID + "-01"},
		{name: "ErrZeroTrace", traceparent: "00-00000000000000000000000000000000-" + spanID + "-01"},
		{name: "ErrZeroSpan", traceparent: "00-" + traceID + "-0000000000000000-01"},
		{name: "ErrVersionFF", traceparent: "ff-" + traceID + "-" + spanID + "-01"},
		{name: "ErrStateAlone", tracestate: "vendor=x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got trace.SpanContext
			h := telemetry.Continue(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = trace.SpanContextFromContext(r.Context())
				w.WriteHeader(http.StatusTeapot)
			}))
			req := httptest.NewRequest("GET", "/", nil)
			if tt.traceparent != "" {
				req.Header.Set("traceparent", tt.traceparent)
			}
			if tt.tracestate != "" {
				req.Header.Set("tracestate", tt.tracestate)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusTeapot {
				t.Fatalf("the wrapped handler did not answer: %d", rec.Code)
			}
			if got.IsValid() != tt.valid {
				t.Fatalf("span context valid = %v, want %v (%+v)", got.IsValid(), tt.valid, got)
			}
			if !tt.valid {
				return
			}
			if got.TraceID().String() != traceID || got.SpanID().String() != spanID || !got.IsRemote() {
				t.Errorf("span context %s/%s remote %v", got.TraceID(), got.SpanID(), got.IsRemote())
			}
			if got.TraceState().String() != tt.state {
				t.Errorf("tracestate %q, want %q", got.TraceState().String(), tt.state)
			}
		})
	}
}

// TestContinueExportsChild: a span started under Continue is exported as
// a child of the caller's span, in the caller's trace.
func TestContinueExportsChild(t *testing.T) {
	clearEnv(t)
	rcv := otlptest.New(t)
	tp, shutdown, err := telemetry.NewProvider(context.Background(), rcv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := telemetry.Continue(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, span := tp.Tracer("test").Start(r.Context(), "front.door")
		span.End()
	}))
	req := httptest.NewRequest("POST", "/v1/calls", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("received %d spans, want 1", len(spans))
	}
	if tid, pid := otlptest.Hex(spans[0].GetTraceId()), otlptest.Hex(spans[0].GetParentSpanId()); tid != "4bf92f3577b34da6a3ce929d0e0e4736" || pid != "00f067aa0ba902b7" {
		t.Errorf("span in trace %s under %s, want the caller's", tid, pid)
	}
}

// resourceReceiver is an OTLP/HTTP receiver that keeps the service.name of
// each resource it is sent, which otlptest does not keep.
func resourceReceiver(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, &msg) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range msg.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					names = append(names, kv.GetValue().GetStringValue())
				}
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
	}
}

func TestServiceName(t *testing.T) {
	for _, tt := range []struct{ name, env, want string }{
		{"OKDefault", "", telemetry.DefaultServiceName},
		{"OKFromEnvironment", "custody-edge", "custody-edge"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			if tt.env != "" {
				t.Setenv("OTEL_SERVICE_NAME", tt.env)
			}
			srv, names := resourceReceiver(t)
			tp, shutdown, err := telemetry.NewProvider(context.Background(), srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "s")
			span.End()
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := names(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("service.name %q, want [%s]", got, tt.want)
			}
		})
	}
}

// TestEndpointTrailingSlash: an endpoint given with its traces path and a
// trailing slash does not get the path twice.
func TestEndpointTrailingSlash(t *testing.T) {
	for _, in := range []string{"http://collector:4318/v1/traces/", "http://collector:4318/v1/traces", "http://collector:4318/", "http://collector:4318"} {
		got, err := telemetry.Endpoint(in, func(string) string { return "" })
		if err != nil || got != "http://collector:4318/v1/traces" {
			t.Errorf("Endpoint(%q) = %q, %v", in, got, err)
		}
	}
}
