package upstream

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/downstream"
)

// TestFlightsPreferTheCallInFlight: of one session's calls, the one still
// in flight is the one its server's messages go to, whichever order the
// flights are kept in; a session with only answered calls still hears
// from its lingering one, and active leaves it out.
func TestFlightsPreferTheCallInFlight(t *testing.T) {
	ss := &mcp.ServerSession{}
	ctx := downstream.With(context.Background(), &downstream.Caller{Session: ss})
	for range 50 { // map order varies
		var f flights
		var ends []func()
		for range 3 {
			_, done := f.start(ctx)
			ends = append(ends, done)
		}
		ends[0]()
		ends[2]()
		list := f.all(false)
		if len(list) != 1 || list[0].ended {
			t.Fatalf("all(false) = %d flights, ended %v: want the call still in flight", len(list), len(list) > 0 && list[0].ended)
		}
		ends[1]()
		if list := f.all(false); len(list) != 1 {
			t.Fatalf("a session whose calls all have answers: %d flights, want its lingering one", len(list))
		}
		if list := f.all(true); len(list) != 0 {
			t.Fatalf("all(true) with every call answered: %d", len(list))
		}
	}
}
