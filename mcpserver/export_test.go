package mcpserver

// OpenSessions returns how many HTTP sessions s counts, in all and of
// agent: what the session cap keeps.
func OpenSessions(s *Server, agent string) (all, agents int) {
	r := s.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open), r.counts[agent]
}

// RequestsInFlight returns how many requests of s's HTTP sessions have
// begun and not yet ended: while one runs, its session's idle timer is
// stopped, and it is armed again as the request ends.
func RequestsInFlight(s *Server) int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	n := 0
	for _, ses := range s.sessions.open {
		n += ses.inFlight
	}
	return n
}
