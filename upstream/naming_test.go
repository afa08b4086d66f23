package upstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// docServer offers one tool, one resource and one prompt, all named the
// same on every instance.
func docServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "doc", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "find"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "doc://readme", Name: "readme"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "hello"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "intro"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	return s
}

func tryOpenSet(t *testing.T, cfg Config) (*Set, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func TestPrefixes(t *testing.T) {
	bare, mine := "", "my_"
	a, b, c := newHTTPUpstream(t, docServer), newHTTPUpstream(t, docServer), newHTTPUpstream(t, docServer)
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	s, err := tryOpenSet(t, Config{
		Servers:    []Server{{Name: "a", URL: a.URL(), Prefix: &bare}, {Name: "b", URL: b.URL()}, {Name: "c", URL: c.URL(), Prefix: &mine}},
		Governance: Governance{"find": read, "b__find": read, "my_find": read},
		Resources:  ResourceGovernance{"*": {}},
		Prompts:    PromptGovernance{"*": {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, o := range s.Offers() {
		tools = append(tools, o.Upstream+":"+o.Exposed)
	}
	if got := strings.Join(tools, " "); got != "a:find b:b__find c:my_find" {
		t.Errorf("tools exposed %s", got)
	}
	var prompts []string
	for _, o := range s.PromptOffers() {
		prompts = append(prompts, o.Exposed)
	}
	if got := strings.Join(prompts, " "); got != "intro b__intro my_intro" {
		t.Errorf("prompts exposed %s", got)
	}
	var uris []string
	for _, o := range s.ResourceOffers() {
		uris = append(uris, o.Exposed)
	}
	if got := strings.Join(uris, " "); got != "doc://readme b+doc://readme c+doc://readme" {
		t.Errorf("resources exposed %s", got)
	}
	for exposed, want := range map[string]string{"doc://readme": "a", "b+doc://readme": "b", "c+doc://readme": "c"} {
		if server, uri, ok := s.routeURI(exposed); !ok || server != want || uri != "doc://readme" {
			t.Errorf("%s routes to %s %s %v, want %s", exposed, server, uri, ok, want)
		}
	}
}

func TestBarePrefixesCollide(t *testing.T) {
	bare := ""
	a, b := newHTTPUpstream(t, docServer), newHTTPUpstream(t, docServer)
	_, err := tryOpenSet(t, Config{Servers: []Server{{Name: "a", URL: a.URL(), Prefix: &bare}, {Name: "b", URL: b.URL(), Prefix: &bare}},
		Governance: Governance{"find": {Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}}})
	if err == nil || !strings.Contains(err.Error(), `two tools would be exposed as "find": from a and b`) {
		t.Fatalf("two servers exposing find: %v", err)
	}
}

func TestBarePrefixesCollideOnResources(t *testing.T) {
	bare := ""
	readme := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "readme", Version: "1"}, nil)
		s.AddResource(&mcp.Resource{URI: "doc://readme", Name: "readme"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		return s
	}
	a, b := newHTTPUpstream(t, readme), newHTTPUpstream(t, readme)
	_, err := tryOpenSet(t, Config{Servers: []Server{{Name: "a", URL: a.URL(), Prefix: &bare}, {Name: "b", URL: b.URL(), Prefix: &bare}},
		Resources: ResourceGovernance{"*": {}}})
	if err == nil || !strings.Contains(err.Error(), `two resources would be exposed as "doc://readme": from a and b`) {
		t.Fatalf("two servers exposing doc://readme: %v", err)
	}
}

// TestDownErrorsHideURLSecrets: what /healthz shows of a server that is
// down keeps no credential a URL carried.
func TestDownErrorsHideURLSecrets(t *testing.T) {
	got := redactURLs(`connect: Post "https://bot:s3cret@mcp.example.com/mcp?token=abc&x=1": dial tcp: refused; GET http://h/p?key=k2`)
	for _, secret := range []string{"s3cret", "bot:", "abc", "k2"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q is in %s", secret, got)
		}
	}
	if !strings.Contains(got, "mcp.example.com/mcp") || !strings.Contains(got, "dial tcp: refused") {
		t.Errorf("too much removed: %s", got)
	}
}
