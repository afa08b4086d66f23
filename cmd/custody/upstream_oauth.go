package main

import (
	"path/filepath"

	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/upstream"
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
