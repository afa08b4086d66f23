package mcpserver

// OpenSessions returns how many HTTP sessions s counts, in all and of
// agent: what the session cap keeps.
func OpenSessions(s *Server, agent string) (all, agents int) { return s.sessions.len(agent) }
