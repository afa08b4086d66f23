package upstream

import "strings"

// How a server's names are exposed: its tools and prompts under its
// prefix (NAME__ by default, Server.Prefix when set), its resources and
// resource templates as NAME+URI, or under their own URIs when its prefix
// is "". Two servers may both have the prefix "" only where nothing they
// expose collides: a collision is a load error naming both.

// prefixOf is the prefix of the server named.
func (s *Set) prefixOf(server string) string {
	for _, srv := range s.cfg.Servers {
		if srv.Name == server && srv.Prefix != nil {
			return *srv.Prefix
		}
	}
	return ExposedName(server, "")
}

// exposedName is the name a tool or prompt of server is exposed under.
func (s *Set) exposedName(server, name string) string { return s.prefixOf(server) + name }

// exposedURI is the URI a resource (or template) of server is exposed
// under.
func (s *Set) exposedURI(server, uri string) string {
	if s.prefixOf(server) == "" {
		return uri
	}
	return ExposedURI(server, uri)
}

// routeURI returns the server an exposed URI routes to and the server's
// own URI: the server whose NAME+ it starts with, else the one server of
// prefix "" that offers it (or, of several, the one whose resource or
// template it is).
func (s *Set) routeURI(exposed string) (server, uri string, ok bool) {
	var bare []*Conn
	for _, c := range s.conns {
		if s.prefixOf(c.Name()) == "" {
			bare = append(bare, c)
			continue
		}
		if rest, found := strings.CutPrefix(exposed, c.Name()+"+"); found {
			return c.Name(), rest, true
		}
	}
	if len(bare) == 1 {
		return bare[0].Name(), exposed, true
	}
	for _, c := range bare {
		if c.offersURI(exposed) {
			return c.Name(), exposed, true
		}
	}
	return "", "", false
}

// offersURI reports whether the server lists uri as a resource, or as an
// instance of one of its templates (by the template's literal start).
func (c *Conn) offersURI(uri string) bool {
	for _, r := range c.Resources() {
		if r.URI == uri {
			return true
		}
	}
	for _, t := range c.ResourceTemplates() {
		head, _, _ := strings.Cut(t.URITemplate, "{")
		if head != "" && strings.HasPrefix(uri, head) {
			return true
		}
	}
	return false
}
