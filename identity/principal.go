// Package identity tells who presents a bearer token: a static token of
// custody's own, or an access token of the team's identity provider, for
// which custody is an OAuth 2.1 resource server (RFC 9068 JWT access
// tokens checked against the issuer's published keys, opaque tokens
// through RFC 7662 introspection, RFC 9728 protected resource metadata),
// and who signed in to the console at the team's OpenID provider
// (Console: the authorization code flow with PKCE, the ID token verified).
//
// A token is never kept, logged or echoed: caches are keyed by its
// SHA-256, refusals name the reason only.
package identity

import "slices"

// Principal is who holds an accepted token. A static token's principal
// has no Issuer; an IdP's has the token's issuer, its subject (the
// configured agent claim), the client it was issued to and its groups.
type Principal struct {
	Issuer   string   `json:"issuer,omitempty"`
	Subject  string   `json:"subject"`
	ClientID string   `json:"client_id,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// Static returns the principal of a static token named id.
func Static(id string) Principal { return Principal{Subject: id} }

// ID is the principal as the ledger records it (a call's actor) and as
// the agents policy names it: the subject of a static token, else
// ISSUER#SUBJECT ("https://idp.example.com#agent-42"), so that two
// issuers' subjects never meet.
func (p Principal) ID() string {
	if p.Issuer == "" {
		return p.Subject
	}
	return p.Issuer + "#" + p.Subject
}

// InGroup reports whether the principal's token named group.
func (p Principal) InGroup(group string) bool { return slices.Contains(p.Groups, group) }
