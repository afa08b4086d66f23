//lint:file-ignore SA1019 logging, roots and sampling are deprecated by SEP-2577 and still relayed for the clients and servers that use them.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/downstream"
)

// Relay is what the door serves of the upstreams besides tools: their
// governed resources, resource templates and prompts (upstream.Relay).
// Listings hold only what is governed. ReadResource and GetPrompt take
// the call's Trace, Actor and Via, cross the gateway and return only once
// the entry that records them is durable; a refusal is a *custody.Error.
type Relay interface {
	Resources() []*mcp.Resource
	ResourceTemplates() []*mcp.ResourceTemplate
	Prompts() []*mcp.Prompt
	ReadResource(ctx context.Context, call custody.Call, uri string) (*mcp.ReadResourceResult, custody.Result, error)
	GetPrompt(ctx context.Context, call custody.Call, name string, args map[string]string) (*mcp.GetPromptResult, custody.Result, error)
	// Complete relays a completion/complete whose ref names an exposed
	// prompt or resource template.
	Complete(ctx context.Context, call custody.Call, params *mcp.CompleteParams) (*mcp.CompleteResult, custody.Result, error)
	// Subscribe and Unsubscribe record a session's subscription to an
	// exposed resource (Subscribe subscribes upstream too);
	// OnResourceUpdated registers the door to hear of every update of a
	// governed resource, by exposed URI.
	Subscribe(ctx context.Context, call custody.Call, uri string) (custody.Result, error)
	Unsubscribe(ctx context.Context, call custody.Call, uri string) (custody.Result, error)
	OnResourceUpdated(f func(ctx context.Context, uri string))
	// SetLevel passes a client's logging/setLevel to the upstreams;
	// OnLog registers the door to hear of the upstreams' log messages
	// that no call in flight hears of.
	SetLevel(ctx context.Context, level mcp.LoggingLevel) error
	OnLog(f func(ctx context.Context, p *mcp.LoggingMessageParams))
	// OnListChanged registers the door to hear when the listings may
	// have changed, to tell the clients.
	OnListChanged(f func(ctx context.Context))
}

// relayCapabilities are the server's capabilities with those of what r
// relays added; nil (the SDK's default) when r relays nothing.
func relayCapabilities(r Relay) *mcp.ServerCapabilities {
	if r == nil {
		return nil
	}
	resources := len(r.Resources()) > 0 || len(r.ResourceTemplates()) > 0
	prompts := len(r.Prompts()) > 0
	if !resources && !prompts {
		return nil
	}
	//lint:ignore SA1019 the SDK's default capabilities, which a nil Capabilities would keep, hold logging
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	if resources {
		caps.Resources = &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}
	}
	if prompts {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	caps.Completions = &mcp.CompletionCapabilities{}
	return caps
}

// ErrorCode is the JSON-RPC error code of a refused resources/read or
// prompts/get; its data holds the refusal under ErrorMeta and the trace
// under TraceMeta, as a refused tool call's _meta does.
const ErrorCode = -32001

// relayFeatures answers the resources and prompts methods from the
// relay (completion/complete too), on both doors: the SDK never sees
// them.
func (s *Server) relayFeatures(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := s.relay()
		if r == nil {
			return next(ctx, method, req)
		}
		switch q := req.(type) {
		case *mcp.ListResourcesRequest:
			return &mcp.ListResourcesResult{Resources: nonNil(r.Resources())}, nil
		case *mcp.ListResourceTemplatesRequest:
			return &mcp.ListResourceTemplatesResult{ResourceTemplates: nonNil(r.ResourceTemplates())}, nil
		case *mcp.ListPromptsRequest:
			return &mcp.ListPromptsResult{Prompts: nonNil(r.Prompts())}, nil
		case *mcp.ReadResourceRequest:
			return s.readResource(ctx, q)
		case *mcp.GetPromptRequest:
			return s.getPrompt(ctx, q)
		case *mcp.CompleteRequest:
			return s.complete(ctx, q)
		}
		if method == "logging/setLevel" {
			return s.setLevel(ctx, req, next, method)
		}
		return next(ctx, method, req)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// relayCall is the call a read or a get makes, with the trace and actor
// a tool call of the same request would have.
func (s *Server) relayCall(session *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta) custody.Call {
	like := &mcp.CallToolRequest{Session: session, Extra: extra, Params: &mcp.CallToolParamsRaw{Meta: meta}}
	return custody.Call{Trace: s.trace(like), Actor: s.actor(like), Via: "mcp"}
}

// withCaller returns ctx carrying the client session a call came from,
// for what the upstream sends back while it works (package downstream).
func (s *Server) withCaller(ctx context.Context, session *mcp.ServerSession, meta mcp.Meta, call custody.Call) context.Context {
	if session == nil {
		return ctx
	}
	return downstream.With(ctx, &downstream.Caller{Session: session, ProgressToken: meta["progressToken"],
		Meta: custody.ForeignMeta(meta), Trace: call.Trace, Actor: call.Actor})
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read needs params"}
	}
	call := s.relayCall(req.Session, req.Extra, req.Params.Meta)
	ctx = s.withCaller(ctx, req.Session, req.Params.Meta, call)
	out, res, err := s.relay().ReadResource(ctx, call, req.Params.URI)
	if err != nil {
		return nil, s.relayError(call.Trace, err)
	}
	out.Meta = withReceipt(out.Meta, res)
	return out, nil
}

func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get needs params"}
	}
	call := s.relayCall(req.Session, req.Extra, req.Params.Meta)
	ctx = s.withCaller(ctx, req.Session, req.Params.Meta, call)
	out, res, err := s.relay().GetPrompt(ctx, call, req.Params.Name, req.Params.Arguments)
	if err != nil {
		return nil, s.relayError(call.Trace, err)
	}
	out.Meta = withReceipt(out.Meta, res)
	return out, nil
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (mcp.Result, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	call := s.relayCall(req.Session, req.Extra, req.Params.Meta)
	ctx = s.withCaller(ctx, req.Session, req.Params.Meta, call)
	out, res, err := s.relay().Complete(ctx, call, req.Params)
	if err != nil {
		return nil, s.relayError(call.Trace, err)
	}
	out.Meta = withReceipt(out.Meta, res)
	return out, nil
}

// withReceipt adds custody's facts of a relayed result to its _meta.
func withReceipt(meta mcp.Meta, res custody.Result) mcp.Meta {
	out := mcp.Meta{}
	for k, v := range meta {
		out[k] = v
	}
	out[TraceMeta] = res.Trace
	out[MetaPrefix+"receipt"] = map[string]any{"seq": res.Receipt.Seq, "hash": res.Receipt.Hash}
	return out
}

// relayError is the JSON-RPC error of a refused read or get: the
// refusal's safe message, and its detail in the data.
func (s *Server) relayError(trace string, err error) error {
	d := custody.DetailOf(err)
	if d.Kind == custody.EINTERNAL {
		s.log.Error("mcp relay", "err", err)
	}
	d.TraceID = trace
	data, _ := json.Marshal(map[string]any{ErrorMeta: d, TraceMeta: trace})
	return &jsonrpc.Error{Code: ErrorCode, Message: d.Kind + ": " + d.Message, Data: data}
}

// subscribeHandlers are the SDK's handlers of resources/subscribe and
// resources/unsubscribe: each is recorded through the relay first, and
// the SDK keeps which session hears of which resource's updates only
// once the relay accepted; nil without a relay.
func (s *Server) subscribeHandlers() (sub func(context.Context, *mcp.SubscribeRequest) error, unsub func(context.Context, *mcp.UnsubscribeRequest) error) {
	if s.relay() == nil {
		return nil, nil
	}
	sub = func(ctx context.Context, req *mcp.SubscribeRequest) error {
		call := s.relayCall(req.Session, req.Extra, req.Params.Meta)
		if _, err := s.relay().Subscribe(ctx, call, req.Params.URI); err != nil {
			return s.relayError(call.Trace, err)
		}
		return nil
	}
	unsub = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		call := s.relayCall(req.Session, req.Extra, req.Params.Meta)
		if _, err := s.relay().Unsubscribe(ctx, call, req.Params.URI); err != nil {
			return s.relayError(call.Trace, err)
		}
		return nil
	}
	return sub, unsub
}

// relayUpdates passes the relay's resource updates to the sessions
// subscribed to them.
func (s *Server) relayUpdates(r Relay) {
	r.OnResourceUpdated(func(ctx context.Context, uri string) {
		if err := s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			s.log.Warn("mcp relay: resources/updated", "uri", uri, "err", err)
		}
	})
}

// setLevel keeps the client's level for the session (the SDK's handler)
// and passes it on to the upstreams. An upstream that refuses it is
// logged, not the client's error: the level holds for the others.
func (s *Server) setLevel(ctx context.Context, req mcp.Request, next mcp.MethodHandler, method string) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if err != nil || !ok || p == nil {
		return res, err
	}
	if err := s.relay().SetLevel(ctx, p.Level); err != nil {
		s.log.Warn("mcp relay: logging/setLevel", "level", p.Level, "err", err)
	}
	return res, nil
}

// relayLogs passes the upstreams' log messages that no call hears of to
// the session of the stdio door, if it set a logging level (the SDK sends
// none otherwise). Over HTTP, where several agents share a server, such a
// message belongs to none of them: it goes to custody's own log.
func (s *Server) relayLogs(r Relay) {
	r.OnLog(func(ctx context.Context, p *mcp.LoggingMessageParams) {
		for ss := range s.srv.Sessions() {
			if ss.ID() != "" {
				continue
			}
			if err := ss.Log(ctx, p); err != nil {
				s.log.Debug("mcp relay: log message", "err", err)
			}
			return
		}
		s.log.Info("upstream log message", "logger", p.Logger, "level", p.Level, "data", p.Data)
	})
}

// listChangedURI and listChangedPrompt name a placeholder the door adds
// to the SDK's own lists and removes at once, for the SDK to send every
// session notifications/resources/list_changed and
// notifications/prompts/list_changed: it sends them on its own changes
// only. The placeholder is never listed nor served, since the relay
// answers every resources and prompts method (relayFeatures).
const (
	listChangedURI    = "custody://list-changed"
	listChangedPrompt = "custody-list-changed"
)

// relayListChanges tells the sessions when the relay's listings may have
// changed.
func (s *Server) relayListChanges(r Relay, caps *mcp.ServerCapabilities) {
	if caps == nil {
		return
	}
	r.OnListChanged(func(context.Context) {
		if caps.Resources != nil {
			s.srv.AddResource(&mcp.Resource{URI: listChangedURI, Name: listChangedURI},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return nil, mcp.ResourceNotFoundError(listChangedURI)
				})
			s.srv.RemoveResources(listChangedURI)
		}
		if caps.Prompts != nil {
			s.srv.AddPrompt(&mcp.Prompt{Name: listChangedPrompt}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return nil, errors.New("not a prompt")
			})
			s.srv.RemovePrompts(listChangedPrompt)
		}
	})
}
