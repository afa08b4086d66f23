package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/upstream"
)

// Offer is the policy a replay decides by: the tools of a configuration,
// the registry of their contracts, and which agent may call which tool.
type Offer struct {
	// Envelope is the id of the envelope the tools are offered as.
	Envelope string
	Registry *contract.Registry
	Tools    []gate.Tool
	// Allowed says whether an agent may call a tool; every agent every
	// tool when nil.
	Allowed func(actor, tool string) bool
	// servers, when the configuration has mcpServers, builds the offer
	// again from the tool definitions pinned on the ledger replayed.
	servers *servers
}

// ConfigError is a configuration that does not fit the tool definitions
// pinned on the ledger replayed: a policy's condition names a field the
// pinned input schema lacks, say.
type ConfigError struct {
	// Seq is the pin entry after which the tools were built.
	Seq int64
	Err error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("the configuration does not fit the tools pinned up to seq %d: %v", e.Seq, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Configured returns the offer of the configuration f: its governed tools,
// with their contracts checked and their conditions compiled as serve does
// (upstream.Set.Contracts, contract.Load, gate.New), on top of the
// contracts base names. It starts nothing and connects to nothing. The
// tools of its mcpServers are those whose definitions (name, input and
// output schemas, annotations) are pinned on the ledger a Run replays
// (tool.pinned, tool.repinned entries), governed by f's policies as serve
// would govern the same definitions listed by their servers; until Run
// reads those pins the offer holds the httpTools alone.
func Configured(ctx context.Context, f *config.File, envelope string, base contract.Options) (Offer, error) {
	cfg := f.Upstream()
	s := &servers{cfg: cfg, base: base, envelope: envelope, allowed: f.Allowed()}
	if len(cfg.Servers) == 0 {
		if len(cfg.HTTPTools) == 0 {
			return Offer{}, custody.Errorf(custody.EINVALID, "the configuration declares no httpTools and no mcpServers: there is no policy to replay")
		}
		set, err := upstream.Open(ctx, cfg)
		if err != nil {
			return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
		}
		defer set.Close()
		return s.build(ctx, set)
	}
	o, err := s.offer(ctx, nil)
	if err != nil {
		return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
	}
	return o, nil
}

// servers builds the offer of a configuration with mcpServers from the
// definitions of their tools.
type servers struct {
	cfg      upstream.Config
	base     contract.Options
	envelope string
	allowed  func(actor, tool string) bool
}

// offer returns the offer whose MCP servers offer the tools defs holds,
// by server name.
func (s *servers) offer(ctx context.Context, defs map[string][]upstream.Definition) (Offer, error) {
	set, err := upstream.Recorded(s.cfg, defs)
	if err != nil {
		return Offer{}, err
	}
	o, err := s.build(ctx, set)
	if err != nil {
		return Offer{}, err
	}
	o.servers = s
	return o, nil
}

// build compiles the governed tools of set into an offer.
func (s *servers) build(ctx context.Context, set *upstream.Set) (Offer, error) {
	cs, err := set.Contracts()
	if err != nil {
		return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
	}
	opts := s.base
	opts.Extra = maps.Clone(s.base.Extra)
	if opts.Extra == nil {
		opts.Extra = map[string][]byte{}
	}
	maps.Copy(opts.Extra, cs)
	reg, err := contract.Load(opts)
	if err != nil {
		return Offer{}, err
	}
	tools, err := set.Tools(ctx, nil)
	if err != nil {
		return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
	}
	return Offer{Envelope: s.envelope, Registry: reg, Tools: slices.Clip(tools), Allowed: s.allowed}, nil
}

// unpinned reports whether the configuration governs a tool of that name
// that the offer lacks, and that actor may call: a tool of an MCP server
// whose definition no pin recorded, so that what a live gateway would
// make of its calls is not known.
func (o Offer) unpinned(actor, tool string) bool {
	if o.servers == nil {
		return false
	}
	if _, _, ok := o.servers.cfg.Governance.For(tool); !ok {
		return false
	}
	if o.Allowed != nil && !o.Allowed(actor, tool) {
		return false
	}
	return !slices.ContainsFunc(o.Tools, func(t gate.Tool) bool { return t.Spec.Name == tool })
}
