package identity

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ProtectedResource is custody's RFC 9728 protected resource metadata.
type ProtectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// wellKnown is the RFC 9728 well-known path segment.
const wellKnown = "/.well-known/oauth-protected-resource"

// Metadata serves the protected resource metadata of the resource and of
// its /mcp endpoint (RFC 9728 section 3: the well-known path, then the
// resource's path) and makes the WWW-Authenticate challenges that point
// to them.
type Metadata struct {
	resource string
	doc      ProtectedResource
}

// NewMetadata returns the metadata of resource, whose tokens the issuers
// grant with scopes (none: left out).
func NewMetadata(resource string, issuers, scopes []string) (*Metadata, error) {
	if _, err := resourceURL(resource); err != nil {
		return nil, err
	}
	resource = strings.TrimSuffix(resource, "/")
	return &Metadata{resource: resource, doc: ProtectedResource{Resource: resource, AuthorizationServers: issuers,
		BearerMethodsSupported: []string{"header"}, ScopesSupported: scopes, ResourceName: "custody"}}, nil
}

// Paths returns the paths the documents are served at: the resource's,
// then its /mcp endpoint's.
func (m *Metadata) Paths() (resource, mcp string) {
	u, _ := url.Parse(m.resource)
	p := strings.TrimSuffix(u.Path, "/")
	return wellKnown + p, wellKnown + p + "/mcp"
}

// URL returns the address of the document of the resource (mcp false) or
// of its /mcp endpoint (mcp true).
func (m *Metadata) URL(mcp bool) string {
	u, _ := url.Parse(m.resource)
	res, mcpPath := m.Paths()
	u.Path = res
	if mcp {
		u.Path = mcpPath
	}
	return u.String()
}

// Handler serves the document of the resource (mcp false) or of its /mcp
// endpoint, whose resource is the /mcp URL.
func (m *Metadata) Handler(mcp bool) http.Handler {
	doc := m.doc
	if mcp {
		doc.Resource = m.resource + "/mcp"
	}
	body, _ := json.Marshal(doc)
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write(body)
	})
}

// Challenge returns the WWW-Authenticate value of a 401 on the resource
// (mcp false) or on /mcp: Bearer with resource_metadata, and, when err
// is a refused token, error="invalid_token" with the reason (RFC 6750
// section 3).
func (m *Metadata) Challenge(mcp bool, err error) string {
	c := fmt.Sprintf("Bearer resource_metadata=%q", m.URL(mcp))
	if r := RefusalOf(err); r != nil {
		c += fmt.Sprintf(`, error="invalid_token", error_description=%q`, strings.ReplaceAll(r.Error(), `"`, "'"))
	}
	return c
}
