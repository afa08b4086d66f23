package upstream

import "time"

// serverTimeout returns the Timeout of the MCP server named name, zero
// when there is none or it sets none (an HTTP tool's upstream names no
// server).
func (s *Set) serverTimeout(name string) time.Duration {
	for _, srv := range s.cfg.Servers {
		if srv.Name == name {
			return srv.Timeout
		}
	}
	return 0
}
