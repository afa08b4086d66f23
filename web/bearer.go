package web

import (
	"context"

	"github.com/custody-dev/custody"
)

// bearer checks a token that is none of the static ones with
// Config.Bearer: a refusal is an error (401 with its reason), never a
// failure of the server.
func (s *Server) bearer(ctx context.Context, token string) (Principal, bool, error) {
	p, err := s.cfg.Bearer(ctx, token)
	if err != nil {
		if custody.ErrorKind(err) != custody.EUNAUTHORIZED {
			s.log.Warn("bearer token check failed", "err", err)
			err = custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
		}
		return Principal{}, false, err
	}
	return p, true, nil
}

// challenge is the WWW-Authenticate value of a 401 refusing err:
// Config.Challenge's, else a plain Bearer challenge.
func (s *Server) challenge(err error) string {
	if s.cfg.Challenge != nil {
		return s.cfg.Challenge(err)
	}
	return `Bearer realm="custody"`
}
