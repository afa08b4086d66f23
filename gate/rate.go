package gate

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/ratewindow"
)

// nsRate counts the calls that ran in each window of each rate limit;
// the stores prune the windows long past (ratewindow.Stale).
const nsRate = ratewindow.NS

// checkRates refuses a rate limit it cannot enforce.
func checkRates(rates []custody.Rate) error {
	for i, r := range rates {
		switch {
		case r.Per != custody.PerAgent && r.Per != custody.PerTool && r.Per != custody.PerTrace && r.Per != custody.PerGlobal:
			return fmt.Errorf("rate %d: per %q: want %q, %q, %q or %q", i, r.Per, custody.PerAgent, custody.PerTool, custody.PerTrace, custody.PerGlobal)
		case r.Calls <= 0:
			return fmt.Errorf("rate %d: calls %d must be positive", i, r.Calls)
		case r.Every < time.Second:
			return fmt.Errorf("rate %d: every %s must be at least a second", i, r.Every)
		}
	}
	return nil
}

// rate refuses a call whose window of one of its tool's rate limits is
// used up. The count is read here, before the call goes on, and counted
// with its call.started entry within the limit (see rateChanges), so
// that concurrent calls, at one gateway or at many sharing a store,
// never run past it.
func (g *Gateway) rate(ctx context.Context, f *flight) error {
	now := g.now()
	for _, r := range f.tool.Spec.Rates {
		key, end := rateKey(f, r, now)
		n, err := g.tallied(ctx, nsRate, key)
		if err != nil {
			return err
		}
		if n >= int64(r.Calls) {
			return rateRefusal(f, r, end, now)
		}
	}
	return nil
}

// rateChanges returns the changes that count a call against its tool's
// rate limits, committed with its call.started entry, each within its
// limit: the commit that would pass one fails, and the call is refused.
func (g *Gateway) rateChanges(f *flight, kind string) []custody.Change {
	if kind != custody.KindCallStarted || len(f.tool.Spec.Rates) == 0 {
		return nil
	}
	now := g.now()
	out := make([]custody.Change, 0, len(f.tool.Spec.Rates))
	for _, r := range f.tool.Spec.Rates {
		key, end := rateKey(f, r, now)
		out = append(out, custody.IncrState(nsRate, key, 1, int64(r.Calls)).Else(rateRefusal(f, r, end, now)))
	}
	return out
}

// rateKey returns the state key of the window of r that holds now, and
// when the window ends (ratewindow.Key).
func rateKey(f *flight, r custody.Rate, now time.Time) (string, time.Time) {
	start := now.Truncate(r.Every)
	var who, what string
	switch r.Per {
	case custody.PerAgent:
		who, what = f.Actor, f.Tool
	case custody.PerTrace:
		who, what = f.Trace, f.Tool
	case custody.PerTool:
		what = f.Tool
	case custody.PerGlobal:
		what = r.Pool
		if what == "" {
			what = f.Tool
		}
	}
	return ratewindow.Key(string(r.Per), who, what, r.Every, start), start.Add(r.Every)
}

// rateRefusal is the denial of a call past a rate limit, saying when to
// call again.
func rateRefusal(f *flight, r custody.Rate, end, now time.Time) *custody.Error {
	var whose string
	switch r.Per {
	case custody.PerAgent:
		whose = fmt.Sprintf("per agent; agent %q has made them", f.Actor)
	case custody.PerTrace:
		whose = fmt.Sprintf("per trace; trace %s has made them", f.Trace)
	case custody.PerTool:
		whose = "by all agents together, who have made them"
	case custody.PerGlobal:
		whose = fmt.Sprintf("for every tool of %q together, which have made them", cmp.Or(r.Pool, f.Tool))
	}
	wait := (end.Sub(now) + time.Second - 1).Truncate(time.Second)
	return &custody.Error{Kind: custody.EDENIED, RetryAfter: wait,
		Message: fmt.Sprintf("tool %q may run at most %d times every %s %s: retry after %s (at %s)",
			f.Tool, r.Calls, r.Every, whose, wait, custody.FormatTime(end)),
		Violations: []custody.Violation{{Keyword: "rate", Message: fmt.Sprintf("%d calls every %s per %s", r.Calls, r.Every, r.Per)}}}
}
