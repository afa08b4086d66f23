// Package bench holds what custody's benchmarks share and the product does
// not use: the entry every load generator appends, and the harness that
// drives a comparison. A Load is callers making calls for a time or for a
// fixed count, flat out or paced on a schedule; a Side is one system
// measured under it, taking turns with the others (TakeTurns) so that all
// meet the same disk, and summed up in a rate and latency percentiles of
// its Samples. FsyncLatency and DiskFloor measure what the disk alone
// allows. The harness knows nothing of the gateway: what a side's call
// does is its caller's. The raw baselines the store is measured against
// live beside it, in rawsqlite and rawpg.
package bench

import (
	"strconv"

	"github.com/custody-dev/custody"
)

// SampleEntry returns the entry the benchmarks append for writer w's i-th
// call: the size and shape of a typical call.succeeded record, with one
// ref. The same entry feeds the raw baselines, so that both sides of a
// comparison write the same bytes.
func SampleEntry(w, i int) custody.Entry {
	// strconv rather than fmt: the load generator's own cost is paid by
	// both sides of a comparison on the same two cores.
	ws, is := strconv.Itoa(w), strconv.Itoa(i)
	body := make([]byte, 0, 192)
	body = append(body, `{"tool":"vms.update","arguments":{"sign_id":"A1-`...)
	body = append(body, ws...)
	body = append(body, `","message":"SLOW DOWN - CRASH AHEAD","speed_kph":60},"output":{"vms_update_id":"u-`...)
	body = append(append(append(body, ws...), '-'), is...)
	body = append(body, `","status":"displayed"},"elapsed_ms":`...)
	body = strconv.AppendInt(body, int64(i%997), 10)
	body = append(body, '}')
	return custody.Entry{
		At:    "2026-01-02T03:04:05.000000Z",
		Kind:  custody.KindCallSucceeded,
		Trace: "trace-" + ws,
		Actor: "agent-1",
		Refs:  map[string]string{"approval_request_id": "ap-" + ws + "-" + is},
		Body:  body,
	}
}
