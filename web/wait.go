package web

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// A client of POST /v1/calls that can keep a request open asks, with
// Prefer: wait=N (RFC 7240, N seconds), that a call held for approval
// wait for the decision: approved, it runs and the result is the answer;
// declined or expired, the refusal is (gate.Gateway.AwaitDecision). The
// wait is capped by Config.MaxWait, below the server's write timeout, and
// ends with the client's request. The answer says what was honoured in
// Preference-Applied: wait=N. The tool's approvalWait (the MCP door's)
// plays no part: the client asked.

// awaitHeld waits for the decision on the approval that holds call when
// the request prefers to wait, and returns the answer; otherwise res and
// err as they are.
func (s *Server) awaitHeld(w http.ResponseWriter, r *http.Request, call custody.Call, res custody.Result, err error) (custody.Result, error) {
	wait, ok := preferWait(r.Header)
	if !ok {
		return res, err
	}
	id, _ := s.cfg.Gateway.Held(call, err)
	if id == "" {
		return res, err
	}
	wait = min(wait, cmp.Or(s.cfg.MaxWait, DefaultMaxWait))
	w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
	call.Trace = res.Trace
	return s.cfg.Gateway.AwaitDecision(r.Context(), call, id, wait, err)
}

// preferWait returns the wait preference of a request's Prefer headers
// (RFC 7240: comma-separated preferences, names case-insensitive, the
// first one of a name counts), whole seconds above zero.
func preferWait(h http.Header) (time.Duration, bool) {
	for _, v := range h.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			pref, _, _ = strings.Cut(pref, ";") // parameters: none defined for wait
			name, val, _ := strings.Cut(strings.TrimSpace(pref), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err != nil || n <= 0 {
				return 0, false
			}
			return time.Duration(min(n, 86400)) * time.Second, true
		}
	}
	return 0, false
}
