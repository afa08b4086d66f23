package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/identity"
	"github.com/custody-dev/custody/web"
)

// serveAuth is custody as an OAuth 2.1 resource server (the config file's
// auth): the verifier of the IdP's access tokens, the protected resource
// metadata, the groups of the agents it has accepted, and the console's
// sign-in at the IdP (auth.console; nil without). A nil serveAuth knows
// static tokens only; its methods then add nothing.
type serveAuth struct {
	verifier *identity.Verifier
	meta     *identity.Metadata
	groups   *identity.Directory
	console  *web.ConsoleIdP
}

// newServeAuth returns the resource server of cfg's auth: nil without one.
func (m *Main) newServeAuth(cfg *config.File) (*serveAuth, error) {
	if cfg == nil || cfg.Auth == nil {
		return nil, nil
	}
	a := cfg.Auth
	vc := identity.Config{Resource: a.Resource, Leeway: a.LeewayDuration(), Now: m.authNow}
	for _, is := range a.Issuers {
		c := identity.Issuer{Issuer: is.Issuer, Audience: is.Audience, AgentClaim: is.AgentClaim,
			GroupsClaim: is.GroupsClaim, Algs: is.Algs}
		if in := is.Introspection; in != nil {
			c.Introspection = &identity.Introspection{ClientID: in.ClientID, ClientSecret: in.ClientSecret, Endpoint: in.Endpoint}
		}
		vc.Issuers = append(vc.Issuers, c)
	}
	v, err := identity.New(vc)
	if err != nil {
		return nil, fmt.Errorf("config auth: %w", err)
	}
	meta, err := identity.NewMetadata(a.Resource, v.Issuers(), a.Scopes)
	if err != nil {
		return nil, fmt.Errorf("config auth: %w", err)
	}
	console, err := m.consoleIdP(cfg)
	if err != nil {
		return nil, err
	}
	return &serveAuth{verifier: v, meta: meta, groups: identity.NewDirectory(), console: console}, nil
}

// consoleIdP is the console's sign-in at the IdP of cfg's auth.console:
// nil without one.
func (m *Main) consoleIdP(cfg *config.File) (*web.ConsoleIdP, error) {
	p, err := m.consoleClient(cfg)
	if p == nil || err != nil {
		return nil, err
	}
	c := cfg.Auth.Console
	return &web.ConsoleIdP{Provider: p, Operators: c.Operators, Auditors: c.Auditors}, nil
}

// consoleClient is custody's client at the IdP of cfg's auth.console,
// its callback under the console's public URL: nil without one.
func (m *Main) consoleClient(cfg *config.File) (*identity.Console, error) {
	c := cfg.Auth.Console
	if c == nil {
		return nil, nil
	}
	p, err := identity.NewConsole(identity.ConsoleConfig{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		RedirectURL: cfg.ConsoleRedirect(web.OIDCCallbackPath), RolesClaim: c.RolesClaim, Scopes: c.Scopes,
		Leeway: cfg.Auth.LeewayDuration(), Now: m.authNow})
	if err != nil {
		return nil, fmt.Errorf("config auth.console: %w", err)
	}
	return p, nil
}

// consoleIdP is web.Config.IdP.
func (a *serveAuth) consoleIdP() *web.ConsoleIdP {
	if a == nil {
		return nil
	}
	return a.console
}

// groupsOf is the agents policy's view of the accepted agents' groups.
func (a *serveAuth) groupsOf() func(actor string) []string {
	if a == nil {
		return nil
	}
	return a.groups.Groups
}

// verify checks an IdP access token and remembers its agent's groups.
func (a *serveAuth) verify(ctx context.Context, token string) (identity.Principal, error) {
	p, err := a.verifier.Verify(ctx, token)
	if err == nil {
		a.groups.Remember(p)
	}
	return p, err
}

// webBearer is web.Config.Bearer: an IdP's token makes an agent.
func (a *serveAuth) webBearer() func(ctx context.Context, token string) (web.Principal, error) {
	if a == nil {
		return nil
	}
	return func(ctx context.Context, token string) (web.Principal, error) {
		p, err := a.verify(ctx, token)
		if err != nil {
			return web.Principal{}, err
		}
		return web.Principal{ID: p.ID(), Role: web.RoleAgent}, nil
	}
}

// challenge is the WWW-Authenticate of a 401 on /v1 (mcp false) or /mcp.
func (a *serveAuth) challenge(mcp bool) func(error) string {
	if a == nil {
		return nil
	}
	return func(err error) string { return a.meta.Challenge(mcp, err) }
}

// mcpAgent authenticates /mcp's bearer tokens: the static agent tokens
// (mcpAgent), then the IdP's access tokens.
func (a *serveAuth) mcpAgent(tokens web.Tokens) func(token string) (string, error) {
	static := mcpAgent(tokens)
	if a == nil {
		return static
	}
	return func(token string) (string, error) {
		actor, err := static(token)
		if err == nil || custody.ErrorKind(err) != custody.EUNAUTHORIZED {
			return actor, err
		}
		p, err := a.verify(context.Background(), token)
		if err != nil {
			return "", err
		}
		return p.ID(), nil
	}
}

// mount serves the protected resource metadata on mux.
func (a *serveAuth) mount(mux *http.ServeMux) {
	if a == nil {
		return
	}
	res, mcp := a.meta.Paths()
	mux.Handle(res, a.meta.Handler(false))
	mux.Handle(mcp, a.meta.Handler(true))
}

// authNow is the clock of access tokens' expiry: m.Now, else time.Now.
func (m *Main) authNow() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}
