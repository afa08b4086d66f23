package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// features are what a server offers besides tools: its resources,
// resource templates and prompts, as of the last listing. A server that
// does not declare the capability offers none.
type features struct {
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// listFeatures reads every page of resources/list,
// resources/templates/list and prompts/list the server's capabilities
// allow (the SDK's iterators follow the cursors).
func listFeatures(ctx context.Context, s *mcp.ClientSession) (features, error) {
	var f features
	caps := &mcp.ServerCapabilities{}
	if r := s.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	var err error
	if caps.Resources != nil {
		if f.resources, err = collect(s.Resources(ctx, nil)); err != nil {
			return f, fmt.Errorf("list resources: %w", err)
		}
		if f.templates, err = collect(s.ResourceTemplates(ctx, nil)); err != nil {
			return f, fmt.Errorf("list resource templates: %w", err)
		}
	}
	if caps.Prompts != nil {
		if f.prompts, err = collect(s.Prompts(ctx, nil)); err != nil {
			return f, fmt.Errorf("list prompts: %w", err)
		}
	}
	return f, nil
}

// collect reads a listing to its end.
func collect[T any](seq func(func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// relistFeatures fetches the resources, templates and prompts again after
// the server said one of their lists changed, and tells the Set, which
// re-checks the prompts' pins.
func (c *Conn) relistFeatures() {
	s := c.current()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := listFeatures(ctx, s)
	if err != nil {
		c.log.Warn("upstream relisting after list_changed failed", "err", err)
		return
	}
	c.mu.Lock()
	c.feats = f
	c.mu.Unlock()
	c.notifyChanged()
}

// Resources returns the resources of the last listing.
func (c *Conn) Resources() []*mcp.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.feats.resources)
}

// ResourceTemplates returns the resource templates of the last listing.
func (c *Conn) ResourceTemplates() []*mcp.ResourceTemplate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.feats.templates)
}

// Prompts returns the prompts of the last listing.
func (c *Conn) Prompts() []*mcp.Prompt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.feats.prompts)
}

// ReadResource runs resources/read of uri (the server's own URI). Like
// Call it fails at once when the server is down and retries nothing.
func (c *Conn) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	token, done := c.flights.start(ctx)
	defer done()
	res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{Meta: c.callerMeta(ctx, token), URI: uri})
	if err != nil {
		return nil, fmt.Errorf("upstream %q: resources/read %s: %w", c.srv.Name, uri, err)
	}
	if res == nil {
		return nil, fmt.Errorf("upstream %q: resources/read %s: %w", c.srv.Name, uri, errors.New("no result"))
	}
	return res, nil
}

// GetPrompt runs prompts/get of the server's prompt name with args.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	token, done := c.flights.start(ctx)
	defer done()
	res, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Meta: c.callerMeta(ctx, token), Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("upstream %q: prompts/get %s: %w", c.srv.Name, name, err)
	}
	if res == nil {
		return nil, fmt.Errorf("upstream %q: prompts/get %s: %w", c.srv.Name, name, errors.New("no result"))
	}
	return res, nil
}

// Complete runs completion/complete with params, whose ref names the
// server's own prompt or resource template.
func (c *Conn) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	token, done := c.flights.start(ctx)
	defer done()
	p := *params
	p.Meta = c.callerMeta(ctx, token)
	res, err := s.Complete(ctx, &p)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: completion/complete: %w", c.srv.Name, err)
	}
	if res == nil {
		return nil, fmt.Errorf("upstream %q: completion/complete: %w", c.srv.Name, errors.New("no result"))
	}
	return res, nil
}
