package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
)

// handleEvents streams, as server-sent events named "approval", the id of
// every approval that changes, on this instance or any other sharing its
// store, so that the console refreshes its inbox at once instead of at
// its next poll. Without Config.ApprovalChanges it is not found, and the
// console polls.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ApprovalChanges == nil {
		s.writeError(w, r, custody.Errorf(custody.ENOTFOUND, "this server has no live updates: the console polls"))
		return
	}
	ids, err := s.cfg.ApprovalChanges(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := s.sendEvent(w, rc, ": live\n\n"); err != nil {
		return
	}
	for id := range ids {
		if err := s.sendEvent(w, rc, fmt.Sprintf("event: approval\ndata: %s\n\n", id)); err != nil {
			return
		}
	}
}

// sendEvent writes one event. The server's write timeout bounds a whole
// answer, and this one lasts as long as its client: each event gets a
// deadline of its own instead, so that a stalled client is still cut off.
func (s *Server) sendEvent(w http.ResponseWriter, rc *http.ResponseController, text string) error {
	if err := rc.SetWriteDeadline(time.Now().Add(s.eventWrite)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprint(w, text); err != nil {
		return err
	}
	return rc.Flush()
}
