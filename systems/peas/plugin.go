package peas

import (
	"context"
	"net/http"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas/otelspan"
)

// Plugin is the pile-up early alert as a system built on custody: the
// seed's tools contract, its five tools, its console page and, with
// --simulate, its live corridor feed. With an OTLP endpoint in the
// environment (OTEL_EXPORTER_OTLP_*) each hop of a chain is a span.
type Plugin struct{}

var _ systems.System = Plugin{}

// Name returns "peas".
func (Plugin) Name() string { return "peas" }

// Contracts returns the seed's tools contract.
func (Plugin) Contracts() []contract.Source { return []contract.Source{Contract()} }

// Serve returns the system's tools, which the gateway serves once it is
// attached, when set asks for peas.
func (Plugin) Serve(ctx context.Context, set systems.Settings) (systems.Served, error) {
	if !set.Asked("peas") {
		return systems.Served{}, nil
	}
	router, err := llm.NewRouter(set.LLM, set.LLMEdge)
	if err != nil {
		return systems.Served{}, err
	}
	tracer, flush, err := otelspan.NewTracer(ctx, "", otelspan.WithGetenv(set.Getenv))
	if err != nil {
		return systems.Served{}, err
	}
	sys := New(Deps{LLM: router, Logger: set.Logger, Tracer: TracerOf(tracer)})
	var gw *gate.Gateway
	served := systems.Served{Title: "Pile-up alert", Tools: sys.Tools(), Close: flush}
	served.Attach = func(_ context.Context, core systems.Core) (http.Handler, error) {
		sys.Attach(core.Approvals, core.Store, core.Store, core.Registry)
		sys.d.OperatorOf, gw = core.OperatorOf, core.Gateway
		return sys.Handler(), nil
	}
	if set.Simulate {
		served.Run = func(ctx context.Context) error { return sys.Run(ctx, gw) }
	}
	return served, nil
}

// TracerOf returns t as a Tracer: nil, tracing off, when t is nil.
func TracerOf(t *otelspan.Tracer) Tracer {
	if t == nil {
		return nil
	}
	return t
}
