package brain

import (
	"context"
	"fmt"
	"net/http"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
)

// Plugin is the Brain as a system built on custody: the seed's packet
// contract and, given a room (--room), the console page of the room's
// review queue.
type Plugin struct{}

var _ systems.System = Plugin{}

// Name returns "brain".
func (Plugin) Name() string { return "brain" }

// Contracts returns the seed's Brain Context Packet contract.
func (Plugin) Contracts() []contract.Source { return []contract.Source{Contract()} }

// Serve opens the room set names and serves its review queue; it is
// off without a room.
func (Plugin) Serve(ctx context.Context, set systems.Settings) (systems.Served, error) {
	if set.Room == "" {
		if set.Asked("brain") {
			return systems.Served{}, fmt.Errorf("brain: serving a room's review queue needs --room FILE (env CUSTODY_BRAIN_ROOM)")
		}
		return systems.Served{}, nil
	}
	room, err := OpenRoom(ctx, set.Room, RoomOptions{})
	if err != nil {
		return systems.Served{}, err
	}
	return systems.Served{
		Title: "Brain room",
		Attach: func(_ context.Context, core systems.Core) (http.Handler, error) {
			return Handler(room, core.OperatorOf), nil
		},
		Close: func(context.Context) error { return room.Close() },
	}, nil
}
