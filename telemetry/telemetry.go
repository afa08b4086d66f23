// Package telemetry exports custody's OpenTelemetry spans over OTLP/HTTP
// and continues a caller's W3C trace at the HTTP front doors.
//
// NewProvider configures the exporter from an explicit endpoint or from
// the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
// environment variables; with neither, tracing is off and nothing is
// exported. Continue reads an incoming traceparent header, so that the
// spans of a call are children of the caller's span.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment variables that turn tracing on.
const (
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// DefaultServiceName is the service.name of the exported resource unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES set one.
const DefaultServiceName = "custody"

// tracesPath is the OTLP/HTTP path of the traces signal.
const tracesPath = "/v1/traces"

// Endpoint returns the OTLP/HTTP traces URL spans go to: endpoint when
// given, else the URL of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as it is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended), as getenv
// (os.Getenv when nil) reads them, and "" when none is set. An explicit
// endpoint is a base URL like the latter, with /v1/traces appended unless
// its path already ends so.
func Endpoint(endpoint string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if endpoint = strings.TrimSpace(endpoint); endpoint != "" {
		return tracesURL(endpoint, "endpoint")
	}
	if v := strings.TrimSpace(getenv(EnvTracesEndpoint)); v != "" {
		u, err := parseURL(v, EnvTracesEndpoint)
		if err != nil {
			return "", err
		}
		if u.Path == "" {
			u.Path = "/"
		}
		return u.String(), nil
	}
	if v := strings.TrimSpace(getenv(EnvEndpoint)); v != "" {
		return tracesURL(v, EnvEndpoint)
	}
	return "", nil
}

// tracesURL returns the traces URL of a base OTLP/HTTP endpoint.
func tracesURL(base, what string) (string, error) {
	u, err := parseURL(base, what)
	if err != nil {
		return "", err
	}
	if p := strings.TrimSuffix(u.Path, "/"); !strings.HasSuffix(p, tracesPath) {
		u.Path = p + tracesPath
	} else {
		u.Path = p
	}
	return u.String(), nil
}

func parseURL(raw, what string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("otlp %s %q: %w", what, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp %s %q: want an http:// or https:// URL", what, raw)
	}
	return u, nil
}

// NewProvider returns a trace provider exporting spans over OTLP/HTTP to
// endpoint, or to the endpoint the environment names when endpoint is
// empty (see Endpoint), and a shutdown func that flushes the spans. With
// no endpoint at all tracing is off: the provider is nil and shutdown
// does nothing. The exporter's other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, TLS) and OTEL_SERVICE_NAME /
// OTEL_RESOURCE_ATTRIBUTES apply from the process environment as usual.
func NewProvider(ctx context.Context, endpoint string, getenv func(string) string) (*sdktrace.TracerProvider, func(context.Context) error, error) {
	target, err := Endpoint(endpoint, getenv)
	if err != nil {
		return nil, nil, err
	}
	if target == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target))
	if err != nil {
		return nil, nil, fmt.Errorf("otlp exporter for %s: %w", target, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	shutdown := func(ctx context.Context) error {
		if err := errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx)); err != nil {
			return fmt.Errorf("flush spans to %s: %w", target, err)
		}
		return nil
	}
	return tp, shutdown, nil
}

// Continue returns h with the caller's W3C trace context (the traceparent
// and tracestate headers) in each request's context, so that the spans a
// request starts continue the caller's trace. A malformed traceparent is
// ignored, as the W3C specification asks: the request starts a new trace.
func Continue(h http.Handler) http.Handler {
	var tc propagation.TraceContext
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(tc.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}
