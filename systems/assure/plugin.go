package assure

import (
	"context"
	"fmt"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
)

// Plugin is the Clinical Action Envelope assurance harness as a system
// built on custody. It serves nothing: it runs from the CLI (custody
// assure), on a registry of its own.
type Plugin struct{}

var _ systems.System = Plugin{}

// Name returns "assure".
func (Plugin) Name() string { return "assure" }

// Contracts returns none: the harness loads its own (LoadRegistry).
func (Plugin) Contracts() []contract.Source { return nil }

// Serve refuses to serve the harness: it runs from the CLI.
func (Plugin) Serve(_ context.Context, set systems.Settings) (systems.Served, error) {
	if set.Asked("assure") {
		return systems.Served{}, fmt.Errorf("assure serves nothing: run it with custody assure")
	}
	return systems.Served{}, nil
}
