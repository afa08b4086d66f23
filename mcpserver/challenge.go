package mcpserver

// challenge is the WWW-Authenticate value of a 401 refusing err:
// Options.Challenge's, else plain Bearer.
func (d *door) challenge(err error) string {
	if d.s.opts.Challenge != nil {
		return d.s.opts.Challenge(err)
	}
	return "Bearer"
}
