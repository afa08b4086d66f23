package config

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Auth makes custody an OAuth 2.1 resource server: bearer tokens that are
// none of the static tokens are access tokens of one of the issuers,
// meant for Resource (package identity).
type Auth struct {
	// Resource is custody's resource identifier, its public base URL: the
	// audience tokens name and what its protected resource metadata says.
	Resource string       `json:"resource"`
	Issuers  []AuthIssuer `json:"issuers"`
	// Leeway is the clock skew allowed on a token's exp and nbf ("30s"
	// when empty).
	Leeway string `json:"leeway"`
	// Scopes are the scopes the metadata lists as supported.
	Scopes []string `json:"scopes"`
	// Console, when set, signs operators and auditors in to the console
	// at the team's OpenID provider.
	Console *AuthConsole `json:"console"`
}

// AuthConsole is custody's client at the OpenID provider operators and
// auditors sign in at: the authorization code flow with PKCE, the
// provider's endpoints and keys found by its discovery document. Roles
// come from the values of RolesClaim: one of Operators makes an
// operator, else one of Auditors an auditor; anyone else is refused.
type AuthConsole struct {
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	RolesClaim   string   `json:"rolesClaim"`
	Operators    []string `json:"operators"`
	Auditors     []string `json:"auditors"`
	// Scopes are asked for beside openid, profile and email: one some
	// providers need before they put groups in the ID token, say.
	Scopes []string `json:"scopes"`
}

// AuthIssuer is one trusted authorization server.
type AuthIssuer struct {
	Issuer        string             `json:"issuer"`
	Audience      string             `json:"audience"`
	AgentClaim    string             `json:"agentClaim"`
	GroupsClaim   string             `json:"groupsClaim"`
	Algs          []string           `json:"algs"`
	Introspection *AuthIntrospection `json:"introspection"`
}

// AuthIntrospection is custody's client at an issuer's RFC 7662
// introspection endpoint, for opaque tokens.
type AuthIntrospection struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	Endpoint     string `json:"endpoint"`
}

// LeewayDuration returns the leeway, zero when not set.
func (a *Auth) LeewayDuration() time.Duration {
	d, _ := time.ParseDuration(a.Leeway)
	return d
}

// checkAuth checks what the schema cannot.
func (f *File) checkAuth() error {
	if f.Auth == nil {
		return nil
	}
	if f.Auth.Leeway != "" {
		if d, err := time.ParseDuration(f.Auth.Leeway); err != nil || d < 0 {
			return fmt.Errorf("/auth/leeway: %q is not a duration such as \"30s\"", f.Auth.Leeway)
		}
	}
	if c := f.Auth.Console; c != nil {
		for _, v := range c.Operators {
			if slices.Contains(c.Auditors, v) {
				return fmt.Errorf("/auth/console: %q is in both operators and auditors: name each value of the roles claim once", v)
			}
		}
	}
	return nil
}

// ConsoleRedirect returns the address the console's OpenID provider
// sends a signed-in browser back to (register it at the provider):
// callbackPath under the console's public URL (console_url), else under
// auth.resource.
func (f *File) ConsoleRedirect(callbackPath string) string {
	return strings.TrimSuffix(cmp.Or(f.ConsoleURL, f.Auth.Resource), "/") + callbackPath
}

// groupPrefix marks an agents key that names a group of the token.
const groupPrefix = "group:"

// AllowedWith returns the check of which agent may use which tool, as
// Allowed, where an agents key is an agent id, a glob of ids
// ("https://idp.example.com#ci-*") or group:NAME, which matches an agent
// whose token lists NAME in its groups (groups(actor)). An agent may use
// the tools of every key it matches; one that matches none every governed
// tool. groups may be nil.
func (f *File) AllowedWith(groups func(actor string) []string) func(actor, tool string) bool {
	if len(f.Agents) == 0 {
		return nil
	}
	agents := f.Agents
	return func(actor, tool string) bool {
		matched := false
		for key, a := range agents {
			if !agentKeyMatches(key, actor, groups) {
				continue
			}
			matched = true
			for _, g := range a.Tools {
				if m, _ := path.Match(g, tool); m {
					return true
				}
			}
		}
		return !matched
	}
}

// agentKeyMatches reports whether an agents key names actor.
func agentKeyMatches(key, actor string, groups func(string) []string) bool {
	if name, ok := strings.CutPrefix(key, groupPrefix); ok {
		if groups == nil {
			return false
		}
		for _, g := range groups(actor) {
			if g == name {
				return true
			}
		}
		return false
	}
	if key == actor {
		return true
	}
	if strings.ContainsAny(key, "*?[") {
		m, _ := path.Match(key, actor)
		return m
	}
	return false
}
