package replay

import (
	"context"
	"errors"
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
}

// ErrServers is wrapped by Configured's error for a configuration whose
// tools come from MCP servers: a replay starts nothing, and the tools'
// input schemas would have to come from the ledger's pins.
var ErrServers = errors.New("a replay does not start MCP servers")

// Configured returns the offer of the configuration f: its governed
// httpTools, with their contracts checked and their conditions compiled as
// serve does (upstream.Set.Contracts, contract.Load, gate.New), on top of
// the contracts base names. It starts nothing and connects to nothing; a
// configuration with enabled mcpServers is refused with ErrServers.
func Configured(ctx context.Context, f *config.File, envelope string, base contract.Options) (Offer, error) {
	cfg := f.Upstream()
	if len(cfg.Servers) > 0 {
		names := make([]string, len(cfg.Servers))
		for i, s := range cfg.Servers {
			names[i] = s.Name
		}
		return Offer{}, fmt.Errorf("mcpServers %q: %w: replay decides the tools of httpTools only", names, ErrServers)
	}
	if len(cfg.HTTPTools) == 0 {
		return Offer{}, custody.Errorf(custody.EINVALID, "the configuration declares no httpTools: there is no policy to replay")
	}
	set, err := upstream.Open(ctx, cfg)
	if err != nil {
		return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
	}
	defer set.Close()
	cs, err := set.Contracts()
	if err != nil {
		return Offer{}, custody.Errorf(custody.EINVALID, "%v", err)
	}
	opts := base
	opts.Extra = maps.Clone(base.Extra)
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
	return Offer{Envelope: envelope, Registry: reg, Tools: slices.Clip(tools), Allowed: f.Allowed()}, nil
}
