package upstream

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// Routes of resources/subscribe and resources/unsubscribe. A subscription
// is recorded like a read, and only a governed resource may be
// subscribed to. custody subscribes to the upstream once per resource and
// keeps that subscription (again after a restart); which client sessions
// hear of its updates is the MCP door's to keep.
const (
	SubscribeRoute   = "resources/subscribe"
	UnsubscribeRoute = "resources/unsubscribe"
)

// Contract file of a subscription's record.
const relaySubscribeOutput = "upstream.relay.subscribe.output.json"

var subscribeOutputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"upstream":{"type":"string"},"uri":{"type":"string"},"exposed_uri":{"type":"string"}},
"required":["upstream","uri","exposed_uri"],"additionalProperties":false}`)

// subscribeTool is the route of resources/subscribe (or, with subscribe
// false, resources/unsubscribe).
func (r *Relay) subscribeTool(subscribe bool) gate.Tool {
	name, what := SubscribeRoute, "resources/subscribe of a governed resource"
	if !subscribe {
		name, what = UnsubscribeRoute, "resources/unsubscribe of a governed resource"
	}
	return gate.Tool{
		Spec: custody.ToolSpec{Name: name, Description: what,
			Input: relayRef(relayReadInput), Output: relayRef(relaySubscribeOutput),
			Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired},
		Handler: r.subscribe(subscribe),
	}
}

// subscribe is the handler of both routes.
func (r *Relay) subscribe(subscribe bool) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		var args struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(c.Args, &args); err != nil {
			return nil, err
		}
		if _, _, ok := r.set.cfg.Resources.For(args.URI); !ok {
			return nil, custody.Errorf(custody.EDENIED, "resource %q is not governed", args.URI)
		}
		server, uri, ok := r.set.routeURI(args.URI)
		conn := r.set.conn(server)
		if !ok || conn == nil {
			return nil, custody.Errorf(custody.ENOTFOUND, "resource %q: no upstream offers it (URIs are SERVER+URI)", args.URI)
		}
		if subscribe {
			if err := conn.Subscribe(ctx, uri); err != nil {
				return nil, err
			}
		}
		return json.Marshal(map[string]string{"upstream": server, "uri": uri, "exposed_uri": args.URI})
	}
}

// Subscribe subscribes call (its Trace, Actor and Via) to the resource
// exposed as uri, through the gateway.
func (r *Relay) Subscribe(ctx context.Context, call custody.Call, uri string) (custody.Result, error) {
	return r.subscription(ctx, call, SubscribeRoute, uri)
}

// Unsubscribe records that call ends its subscription to uri.
func (r *Relay) Unsubscribe(ctx context.Context, call custody.Call, uri string) (custody.Result, error) {
	return r.subscription(ctx, call, UnsubscribeRoute, uri)
}

func (r *Relay) subscription(ctx context.Context, call custody.Call, route, uri string) (custody.Result, error) {
	args, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return custody.Result{}, err
	}
	call.Tool, call.Args = route, args
	return r.gw.Call(ctx, call)
}

// OnResourceUpdated registers f to be told (on the notification's
// goroutine) the exposed URI of every update an upstream announces of a
// governed resource.
func (r *Relay) OnResourceUpdated(f func(ctx context.Context, uri string)) {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	r.set.listeners = append(r.set.listeners, f)
}

// updatedOf returns the handler of server's resources/updated
// notifications.
func (s *Set) updatedOf(server string) func(uri string) {
	return func(uri string) {
		exposed := s.exposedURI(server, uri)
		if _, _, ok := s.cfg.Resources.For(exposed); !ok {
			return
		}
		s.mu.Lock()
		ls := slices.Clone(s.listeners)
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, f := range ls {
			f(ctx, exposed)
		}
	}
}

// resourceUpdated passes a resources/updated notification on.
func (c *Conn) resourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if c.updated != nil && req != nil && req.Params != nil {
		c.updated(req.Params.URI)
	}
}

// Subscribe runs resources/subscribe of uri (the server's own) and keeps
// it, to subscribe again after the server restarts.
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	s, err := c.live(ctx)
	if err != nil {
		return err
	}
	if r := s.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Resources == nil || !r.Capabilities.Resources.Subscribe {
		return custody.Errorf(custody.EINVALID, "upstream %s does not offer resource subscriptions", c.Name())
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	c.subs[uri] = true
	return nil
}

// resubscribe subscribes again to every resource custody subscribed to,
// after the server restarted or changed its lists (a server that already
// has the subscription keeps it).
func (s *Set) resubscribe(ctx context.Context) {
	for _, c := range s.conns {
		c.mu.Lock()
		sess, uris := c.session, slices.Sorted(maps.Keys(c.subs))
		c.mu.Unlock()
		if sess == nil {
			continue
		}
		for _, uri := range uris {
			if err := sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				s.log.Warn("upstream resubscribe failed", "upstream", c.Name(), "uri", uri, "err", err)
			}
		}
	}
}
