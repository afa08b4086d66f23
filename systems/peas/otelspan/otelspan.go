// Package otelspan makes the hops of the pile-up chain OpenTelemetry spans:
// a peas.Tracer that puts each hop (detect_pileup_signature,
// compose_ops_brief, request_approval, issue_vms_update, notify_driver)
// under one prediction root span per chain and exports the spans over
// OTLP/HTTP.
//
// NewTracer configures the exporter from an explicit endpoint or from the
// standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
// environment variables; with neither, tracing stays off and the briefs'
// prediction ids are null.
package otelspan

import (
	"context"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody/telemetry"
)

// Names of the spans and their attributes.
const (
	// RootSpan names the prediction root span of a chain.
	RootSpan = "peas.prediction"
	// ScopeName is the instrumentation scope of the spans.
	ScopeName = "github.com/custody-dev/custody/systems/peas"
	// AttrChain is the gateway trace of the chain, on every span.
	AttrChain = "custody.trace"
	// DefaultServiceName is the service.name of the exported resource
	// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES set one.
	DefaultServiceName = telemetry.DefaultServiceName
	// DefaultIdle is how long a chain's root span stays open without a
	// hop before the next Start ends it.
	DefaultIdle = time.Hour
)

// Environment variables that turn tracing on.
const (
	EnvTracesEndpoint = telemetry.EnvTracesEndpoint
	EnvEndpoint       = telemetry.EnvEndpoint
)

// Tracer is a peas.Tracer on an OpenTelemetry trace provider. It keeps
// the root span of every open chain until peas ends the chain, the root
// has been idle for longer than the idle timeout, or Close. It is safe
// for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	idle   time.Duration
	now    func() time.Time

	mu    sync.Mutex
	roots map[string]*root
}

// root is the open prediction root span of one chain.
type root struct {
	span trace.Span
	last time.Time
}

// config is what the options set.
type config struct {
	idle   time.Duration
	now    func() time.Time
	getenv func(string) string
}

// Option configures a Tracer.
type Option func(*config)

// WithGetenv sets how NewTracer reads the endpoint variables (os.Getenv
// by default).
func WithGetenv(getenv func(string) string) Option {
	return func(c *config) {
		if getenv != nil {
			c.getenv = getenv
		}
	}
}

func newConfig(opts []Option) config {
	c := config{idle: DefaultIdle, now: time.Now, getenv: os.Getenv}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// New returns a Tracer on the provider tp. The caller owns tp: Close the
// Tracer, then shut tp down.
func New(tp trace.TracerProvider, opts ...Option) *Tracer {
	c := newConfig(opts)
	return &Tracer{
		tracer: tp.Tracer(ScopeName),
		idle:   c.idle,
		now:    c.now,
		roots:  map[string]*root{},
	}
}

// Start starts the span of hop name in chain under the chain's prediction
// root span, starting the root with the chain's first hop. An empty chain
// gets a root of its own for this hop. It implements peas.Tracer.
func (t *Tracer) Start(ctx context.Context, chain, name string) (context.Context, string, string, func()) {
	rs := t.root(ctx, chain)
	ctx, sp := t.tracer.Start(trace.ContextWithSpan(ctx, rs), name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(AttrChain, chain)))
	sc := sp.SpanContext()
	return ctx, sc.TraceID().String(), sc.SpanID().String(), func() { sp.End() }
}

// root returns chain's root span, starting it when the chain has none,
// and ends the roots idle for too long.
func (t *Tracer) root(ctx context.Context, chain string) trace.Span {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, r := range t.roots {
		if k != chain && now.Sub(r.last) > t.idle {
			r.span.End()
			delete(t.roots, k)
		}
	}
	if r, ok := t.roots[chain]; ok && chain != "" {
		r.last = now
		return r.span
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(AttrChain, chain)),
	}
	if parent := trace.SpanContextFromContext(ctx); parent.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: parent}))
	}
	_, sp := t.tracer.Start(ctx, RootSpan, opts...)
	if chain != "" {
		t.roots[chain] = &root{span: sp, last: now}
	} else {
		// A hop outside any chain: its root ends at once.
		sp.End()
	}
	return sp
}

// End ends chain's root span. It implements peas.Tracer.
func (t *Tracer) End(chain string) {
	t.mu.Lock()
	r, ok := t.roots[chain]
	delete(t.roots, chain)
	t.mu.Unlock()
	if ok {
		r.span.End()
	}
}

// Close ends the root spans of every open chain.
func (t *Tracer) Close() {
	t.mu.Lock()
	roots := t.roots
	t.roots = map[string]*root{}
	t.mu.Unlock()
	for _, r := range roots {
		r.span.End()
	}
}

// NewTracer returns a Tracer exporting spans over OTLP/HTTP to endpoint,
// or to the endpoint the environment names when endpoint is empty (see
// telemetry.Endpoint; WithGetenv sets how those variables are read), and a shutdown
// func that ends every open chain's root span and flushes the spans. With
// no endpoint at all tracing is off: the Tracer is nil and shutdown does
// nothing. The exporter's other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression, TLS) and OTEL_SERVICE_NAME /
// OTEL_RESOURCE_ATTRIBUTES apply from the process environment as usual.
func NewTracer(ctx context.Context, endpoint string, opts ...Option) (*Tracer, func(context.Context) error, error) {
	tp, flush, err := telemetry.NewProvider(ctx, endpoint, newConfig(opts).getenv)
	if err != nil || tp == nil {
		return nil, flush, err
	}
	t := New(tp, opts...)
	shutdown := func(ctx context.Context) error {
		t.Close()
		return flush(ctx)
	}
	return t, shutdown, nil
}
