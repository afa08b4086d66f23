package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the HTTP door's session limits.
const (
	// DefaultSessionIdleTimeout is how long an MCP session may go without
	// a request before it is closed.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultMaxSessionsPerAgent is how many MCP sessions one agent may
	// hold open at once.
	DefaultMaxSessionsPerAgent = 64
)

// IdleTimer is the timer that closes a session once it has been idle
// for its timeout: *time.Timer satisfies it. Stop reports whether the
// timer was pending, and keeps it from firing; Reset makes it due d from
// now, pending or not.
type IdleTimer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// afterFunc starts the timers of the sessions when Options.AfterFunc is
// unset.
func afterFunc(d time.Duration, f func()) IdleTimer { return time.AfterFunc(d, f) }

// CodeSessionLimit is the JSON-RPC error code of an initialize refused
// because the agent's sessions are at their cap and all busy.
const CodeSessionLimit = -32001

// sessions counts the open HTTP sessions of every agent and keeps each
// agent under its cap. A new session beyond the cap evicts the agent's
// least recently active session that has no request in flight: a client
// that restarted without closing its sessions gets in again at once,
// where a refusal would lock it out until its old sessions timed out.
// When every one of the agent's sessions is busy, the new one is refused.
//
// sessions also closes a session idle for longer than its timeout: the
// door answers some requests without the SDK (see fastCall), so the SDK's
// own idle timer, which only its requests reset, cannot be the judge.
type sessions struct {
	max   int
	idle  time.Duration
	after func(time.Duration, func()) IdleTimer

	mu     sync.Mutex
	open   map[*mcp.ServerSession]*session
	byID   map[string]*mcp.ServerSession
	counts map[string]int
}

// session is one open session of an agent.
type session struct {
	agent    string
	inFlight int
	last     time.Time // when its last request started or ended
	timer    IdleTimer // closes the session when idle; stopped while a request runs
}

// newSessions returns the sessions of a door, each capped at max per
// agent and closed when idle for idle, with timers started by after.
func newSessions(max int, idle time.Duration, after func(time.Duration, func()) IdleTimer) *sessions {
	return &sessions{max: max, idle: idle, after: after, open: map[*mcp.ServerSession]*session{},
		byID: map[string]*mcp.ServerSession{}, counts: map[string]int{}}
}

// admit registers ss, which agent is opening, evicting the agent's least
// recently active idle session when it would exceed its cap; with none
// idle it refuses. A session admitted is forgotten when it closes.
func (r *sessions) admit(ss *mcp.ServerSession, agent string) error {
	victim, added, err := r.add(ss, agent)
	if err != nil || !added {
		return err
	}
	if victim != nil {
		// add has forgotten it; closing takes it out of the SDK.
		victim.Close()
	}
	go func() {
		ss.Wait()
		r.remove(ss)
	}()
	return nil
}

// add registers ss, unless it already is, and forgets the session to
// evict, if one must go.
func (r *sessions) add(ss *mcp.ServerSession, agent string) (victim *mcp.ServerSession, added bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, known := r.open[ss]; known {
		return nil, false, nil
	}
	if r.counts[agent] >= r.max {
		victim = r.idlest(agent)
		if victim == nil {
			return nil, false, &jsonrpc.Error{Code: CodeSessionLimit, Message: fmt.Sprintf(
				"agent %q already has %d MCP sessions open, all busy: close one (HTTP DELETE /mcp with its Mcp-Session-Id) or retry later", agent, r.max)}
		}
		r.drop(victim)
	}
	r.open[ss] = &session{agent: agent, last: time.Now(), timer: r.after(r.idle, func() { ss.Close() })}
	r.byID[ss.ID()] = ss
	r.counts[agent]++
	return victim, true, nil
}

// idlest returns agent's least recently active session with no request
// in flight, nil when all are busy.
func (r *sessions) idlest(agent string) *mcp.ServerSession {
	var best *mcp.ServerSession
	var bestAt time.Time
	for ss, s := range r.open {
		if s.agent != agent || s.inFlight > 0 {
			continue
		}
		if best == nil || s.last.Before(bestAt) {
			best, bestAt = ss, s.last
		}
	}
	return best
}

// remove forgets ss; it is a no-op when ss was already evicted.
func (r *sessions) remove(ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(ss)
}

// drop forgets ss; r.mu is held.
func (r *sessions) drop(ss *mcp.ServerSession) {
	s, ok := r.open[ss]
	if !ok {
		return
	}
	s.timer.Stop()
	delete(r.open, ss)
	if r.byID[ss.ID()] == ss {
		delete(r.byID, ss.ID())
	}
	if r.counts[s.agent]--; r.counts[s.agent] <= 0 {
		delete(r.counts, s.agent)
	}
}

// begin and end bracket a request of ss, so that a session is neither
// evicted nor timed out mid-request; its idle time starts at the end of
// its last request.
func (r *sessions) begin(ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.open[ss]; ok {
		if s.inFlight == 0 {
			s.timer.Stop()
		}
		s.inFlight++
		s.last = time.Now()
	}
}

func (r *sessions) end(ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.open[ss]; ok {
		if s.inFlight--; s.inFlight == 0 {
			s.timer.Reset(r.idle)
		}
		s.last = time.Now()
	}
}

// lookup returns the open session with id and the agent holding it.
func (r *sessions) lookup(id string) (*mcp.ServerSession, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ss, ok := r.byID[id]
	if !ok {
		return nil, "", false
	}
	return ss, r.open[ss].agent, true
}

// limit is the receiving middleware that admits every new HTTP session
// under its agent's cap and tracks the requests of admitted ones.
// Sessions without an authenticated agent (stdio) are not counted.
func (r *sessions) limit(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		extra := req.GetExtra()
		if !ok || extra == nil || extra.TokenInfo == nil || extra.TokenInfo.UserID == "" {
			return next(ctx, method, req)
		}
		if method == "initialize" {
			if err := r.admit(ss, extra.TokenInfo.UserID); err != nil {
				return nil, err
			}
		}
		r.begin(ss)
		defer r.end(ss)
		return next(ctx, method, req)
	}
}
