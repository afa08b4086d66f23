package idptest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rs"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// tokenLifetime is how long c's access tokens last: its Lifetime, else
// the provider's default. A test that wants a token to expire while it
// runs gives its client a short one, and waits for what follows (a new
// token seen, say), never for a time.
func (c *Client) tokenLifetime() time.Duration {
	if c.Lifetime > 0 {
		return c.Lifetime
	}
	return lifetime
}

// Protected is a server that requires an access token of the provider,
// as an MCP server behind OAuth does: it serves a request only when it
// bears a token that the provider's introspection endpoint says is
// active and whose audience names the server's URL, and answers 401
// otherwise. It checks with zitadel's resource-server client, as the
// introspecting client IntrospectorID. It keeps what each request sent
// as its Authorization.
type Protected struct {
	// URL is where it serves, and the audience it requires.
	URL    string
	issuer string
	rs     rs.ResourceServer

	mu       sync.Mutex
	sent     []string // each request's Authorization header
	admitted []string // the distinct tokens it admitted, first seen first
	refused  int
}

// Protect serves h behind the provider's tokens until the test ends.
func (o *OP) Protect(t testing.TB, h http.Handler) *Protected {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server, err := rs.NewResourceServerClientCredentials(ctx, o.Issuer, IntrospectorID, IntrospectorSecret,
		rs.WithStaticEndpoints(o.URL+"/oauth/token", o.URL+"/oauth/introspect"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Protected{URL: "http://" + ln.Addr().String(), issuer: o.Issuer, rs: server}
	srv := httptest.NewUnstartedServer(p.guard(h))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return p
}

// metadataPath is where p serves its protected resource metadata (RFC
// 9728), which its 401s name.
const metadataPath = "/.well-known/oauth-protected-resource"

// guard admits the requests that bear a token for p, and serves p's
// protected resource metadata to anyone.
func (p *Protected) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == metadataPath {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": p.URL, "authorization_servers": []string{p.issuer},
				"bearer_methods_supported": []string{"header"}})
			return
		}
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		ok = ok && p.active(r.Context(), tok)
		p.mu.Lock()
		p.sent = append(p.sent, auth)
		if ok && !slices.Contains(p.admitted, tok) {
			p.admitted = append(p.admitted, tok)
		}
		if !ok {
			p.refused++
		}
		p.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+p.URL+metadataPath+`"`)
			http.Error(w, "a valid access token for this server is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// active reports whether the provider says tok is active for p.
func (p *Protected) active(ctx context.Context, tok string) bool {
	resp, err := rs.Introspect[*oidc.IntrospectionResponse](ctx, p.rs, tok)
	return err == nil && resp.Active && slices.Contains([]string(resp.Audience), p.URL)
}

// Sent returns the Authorization header of every request so far, ""
// where a request had none.
func (p *Protected) Sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// Admitted returns the distinct tokens admitted so far, first seen first.
func (p *Protected) Admitted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.admitted)
}

// Refused returns how many requests were answered 401.
func (p *Protected) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
