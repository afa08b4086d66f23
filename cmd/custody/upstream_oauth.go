package main

import (
	"context"
	"path/filepath"

	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/upstream"
	"github.com/custody-dev/custody/web"
)

// upstreamTokens returns where the OAuth tokens of f's servers are kept:
// in db, sealed with the key in upstream.TokenKeyFile beside db's signing
// key (created there on first use, never in the database); nil when no
// server of f uses OAuth, or db keeps no tokens.
func upstreamTokens(f *config.File, db dataStore) (*upstream.TokenVault, error) {
	store, ok := db.(upstream.TokenStore)
	if !ok || !usesOAuth(f) || db.PublicKeyFile() == "" {
		return nil, nil
	}
	return upstream.OpenTokenVault(store, filepath.Join(filepath.Dir(db.PublicKeyFile()), upstream.TokenKeyFile))
}

// usesOAuth reports whether an enabled server of f declares oauth.
func usesOAuth(f *config.File) bool {
	for _, s := range f.MCPServers {
		if s.OAuth != nil && !s.Disabled {
			return true
		}
	}
	return false
}

// connectsByCode reports whether an enabled server of f takes a person's
// authorization (the authorization code grant).
func connectsByCode(f *config.File) bool {
	for _, s := range f.MCPServers {
		if s.OAuth != nil && !s.Disabled && s.OAuth.Grant == upstream.GrantAuthorizationCode {
			return true
		}
	}
	return false
}

// upstreamConnector is web.Config.Connector: the servers of up, opened
// from f, that an operator connects; nil without one.
func upstreamConnector(up *upstream.Set, f *config.File) web.Connector {
	if up == nil || !connectsByCode(f) {
		return nil
	}
	return setConnector{up}
}

// connectRedirect is web.Config.ConnectRedirect: under the console's
// public URL (console_url, else auth.resource) when f names one.
func connectRedirect(f *config.File) string {
	if f.ConsoleURL == "" && (f.Auth == nil || f.Auth.Resource == "") {
		return ""
	}
	return f.ConsoleRedirect(web.ConnectCallbackPath)
}

// setConnector is an upstream.Set as web.Connector.
type setConnector struct{ set *upstream.Set }

func (c setConnector) AuthorizationURL(ctx context.Context, name, redirectURI, state, verifier string) (string, error) {
	return c.set.AuthorizationURL(ctx, name, redirectURI, state, verifier)
}

func (c setConnector) Connect(ctx context.Context, name, redirectURI, code, verifier string, record func(any) error) error {
	return c.set.Connect(ctx, name, redirectURI, code, verifier, func(cn upstream.Connection) error { return record(cn) })
}
