package upstream

import (
	"context"

	"github.com/custody-dev/custody"
)

// PinnedIn returns the definition hash of the tool exposed as name as st
// keeps its pin (what Pins.Pinned returns in the process that pinned it),
// and whether the tool is pinned. It serves who reads a store without
// serving its tools: `custody grants list` shows a grant made under
// another definition void.
func PinnedIn(ctx context.Context, st custody.StateStore, name string) (string, bool, error) {
	p := &Pins{kind: toolPins, state: st}
	pn, ok, err := p.load(ctx, name)
	if err != nil || !ok {
		return "", false, err
	}
	return pn.SHA256, true, nil
}
