package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/custody-dev/custody/upstream"
)

// OAuth is a server's "oauth": custody's own credentials as a client of
// the authorization server that the server at the URL trusts. custody
// obtains an access token by client credentials, or by the authorization
// code grant an operator completes in the console ("grant":
// "authorization_code"), and sends it to the server; the agent's token is
// never sent on. Write the secret as "${env:NAME}".
type OAuth struct {
	Grant        string   `json:"grant"`
	Issuer       string   `json:"issuer"`
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes"`
	Resource     string   `json:"resource"`
}

// upstream converts a checked oauth; nil for none.
func (o *OAuth) upstream() *upstream.OAuth {
	if o == nil {
		return nil
	}
	return &upstream.OAuth{Grant: o.Grant, Issuer: o.Issuer, TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		Scopes: slices.Clone(o.Scopes), Resource: o.Resource}
}

// checkOAuth checks each server's oauth as upstream.OAuth.Check does,
// and refuses one beside an Authorization header: the two would both set
// it. No error repeats the secret.
func (f *File) checkOAuth() error {
	for _, name := range sortedKeys(f.MCPServers) {
		s := f.MCPServers[name]
		if s.OAuth == nil {
			continue
		}
		ptr := "/mcpServers/" + escape(name)
		for _, k := range sortedKeys(s.Headers) {
			if strings.EqualFold(k, "Authorization") {
				return fmt.Errorf("%s/headers/%s: oauth sets the Authorization header (custody obtains the token): keep oauth or this header, not both", ptr, escape(k))
			}
		}
		if err := s.OAuth.upstream().Check(); err != nil {
			return fmt.Errorf("%s/oauth/%v", ptr, err)
		}
	}
	return nil
}
