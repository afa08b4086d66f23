package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/upstream"
)

// pins are the tool definitions pinned on the ledger so far, and the
// tools in quarantine, as a replay reads them in ledger order.
type pins struct {
	// defs are the pinned definitions by server, then by exposed name.
	defs map[string]map[string]upstream.Definition
	// changed says a pin was read since the offer was last built; seq
	// is the last pin's.
	changed bool
	seq     int64
	// quarantined are the tools a tool.quarantined entry put in
	// quarantine, until a tool.repinned entry takes them out.
	quarantined map[string]bool
}

func newPins() *pins {
	return &pins{defs: map[string]map[string]upstream.Definition{}, quarantined: map[string]bool{}}
}

// isPin reports whether an entry of kind tells of a tool's pin.
func isPin(kind string) bool {
	switch kind {
	case upstream.KindToolPinned, upstream.KindToolRepinned, upstream.KindToolQuarantined:
		return true
	}
	return false
}

// entry takes a pin entry: a tool.pinned or tool.repinned entry pins its
// definition (and ends a quarantine), a tool.quarantined one starts one.
func (p *pins) entry(e *custody.Entry) error {
	if e.Kind == upstream.KindToolQuarantined {
		var b struct {
			Tool string `json:"tool"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return fmt.Errorf("seq %d: %s body: %w", e.Seq, e.Kind, err)
		}
		p.quarantined[b.Tool] = true
		return nil
	}
	exposed, server, d, err := upstream.PinnedDefinition(e.Body)
	if err != nil {
		return fmt.Errorf("seq %d: %s: %w", e.Seq, e.Kind, err)
	}
	if p.defs[server] == nil {
		p.defs[server] = map[string]upstream.Definition{}
	}
	p.defs[server][exposed] = d
	delete(p.quarantined, exposed)
	p.changed, p.seq = true, e.Seq
	return nil
}

// byServer returns the pinned definitions of each server, in the order of
// their exposed names.
func (p *pins) byServer() map[string][]upstream.Definition {
	out := map[string][]upstream.Definition{}
	for server, defs := range p.defs {
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			out[server] = append(out[server], defs[name])
		}
	}
	return out
}

// rebuild builds the replayer's gateway again when a pin was read since
// it was built, so that the calls after a pin are decided with the tool
// it pinned.
func (r *replayer) rebuild(ctx context.Context) error {
	if !r.pins.changed || r.offer.servers == nil {
		return nil
	}
	o, err := r.offer.servers.offer(ctx, r.pins.byServer())
	if err != nil {
		return &ConfigError{Seq: r.pins.seq, Err: err}
	}
	if err := r.build(o); err != nil {
		return &ConfigError{Seq: r.pins.seq, Err: err}
	}
	r.pins.changed = false
	return nil
}
