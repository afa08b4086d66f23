package upstream

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// CompleteRoute is the relay's route of completion/complete: the
// completion of an argument of a governed prompt or resource template,
// relayed to the server that offers it and recorded with the values it
// suggested.
const CompleteRoute = "completion/complete"

// Contract files of the completion route.
const (
	relayCompleteInput  = "upstream.relay.complete.input.json"
	relayCompleteOutput = "upstream.relay.complete.output.json"
)

var (
	completeInputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{
 "ref":{"type":"object","properties":{"type":{"enum":["ref/prompt","ref/resource"]},"name":{"type":"string"},"uri":{"type":"string"}},
  "required":["type"],"additionalProperties":false},
 "argument":{"type":"object","properties":{"name":{"type":"string"},"value":{"type":"string"}},"required":["name","value"],"additionalProperties":false},
 "context":{"type":"object","properties":{"arguments":{"type":"object","additionalProperties":{"type":"string"}}},"additionalProperties":false}},
"required":["ref","argument"],"additionalProperties":false}`)
	completeOutputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"upstream":{"type":"string"},"ref":{"type":"object"},
 "completion":{"type":"object","properties":{"values":{"type":"array","items":{"type":"string"},"maxItems":100},
  "total":{"type":"integer"},"hasMore":{"type":"boolean"}},"required":["values"],"additionalProperties":false}},
"required":["upstream","ref","completion"],"additionalProperties":false}`)
)

// completeArgs are a completion/complete's params as the route takes
// them: without _meta, which is not the upstream's to see.
type completeArgs struct {
	Ref      *mcp.CompleteReference     `json:"ref"`
	Argument mcp.CompleteParamsArgument `json:"argument"`
	Context  *mcp.CompleteContext       `json:"context,omitempty"`
}

// completeTool is the completion route.
func (r *Relay) completeTool() gate.Tool {
	return gate.Tool{
		Spec: custody.ToolSpec{
			Name: CompleteRoute, Description: "completion/complete of the arguments of governed prompts and resource templates",
			Input: relayRef(relayCompleteInput), Output: relayRef(relayCompleteOutput),
			Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
		},
		Handler: r.complete,
	}
}

// complete relays a completion whose ref names a governed prompt (not in
// quarantine) or a governed resource template, under the server's names.
func (r *Relay) complete(ctx context.Context, c custody.Call) (json.RawMessage, error) {
	var args completeArgs
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return nil, err
	}
	exposed := *args.Ref
	server, own, err := r.resolveRef(exposed)
	if err != nil {
		return nil, err
	}
	conn := r.set.conn(server)
	if conn == nil {
		return nil, custody.Errorf(custody.ENOTFOUND, "completion: no upstream %q", server)
	}
	res, err := conn.Complete(ctx, &mcp.CompleteParams{Ref: &own, Argument: args.Argument, Context: args.Context})
	if err != nil {
		return nil, err
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return json.Marshal(map[string]any{"upstream": server, "ref": exposed, "completion": res.Completion})
}

// resolveRef returns the server and the server's own reference of an
// exposed one, refusing what custody does not expose.
func (r *Relay) resolveRef(ref mcp.CompleteReference) (string, mcp.CompleteReference, error) {
	switch ref.Type {
	case "ref/prompt":
		for _, o := range r.set.PromptOffers() {
			if o.Exposed != ref.Name || o.Key == "" {
				continue
			}
			if r.pins.Quarantined(o.Exposed) {
				return "", ref, custody.Errorf(custody.EDENIED, "prompt %q is quarantined: its completions are not relayed", o.Exposed)
			}
			return o.Upstream, mcp.CompleteReference{Type: ref.Type, Name: o.Prompt.Name}, nil
		}
		return "", ref, custody.Errorf(custody.EDENIED, "prompt %q is not governed", ref.Name)
	default:
		server, uri, ok := r.set.routeURI(ref.URI)
		if _, _, governed := r.set.cfg.Resources.For(ref.URI); !ok || !governed {
			return "", ref, custody.Errorf(custody.EDENIED, "resource %q is not governed", ref.URI)
		}
		return server, mcp.CompleteReference{Type: ref.Type, URI: uri}, nil
	}
}

// Complete relays a completion/complete for call (its Trace, Actor and
// Via) through the gateway; the result is the completion the entry
// records.
func (r *Relay) Complete(ctx context.Context, call custody.Call, params *mcp.CompleteParams) (*mcp.CompleteResult, custody.Result, error) {
	raw, err := json.Marshal(completeArgs{Ref: params.Ref, Argument: params.Argument, Context: params.Context})
	if err != nil {
		return nil, custody.Result{}, err
	}
	call.Tool, call.Args = CompleteRoute, raw
	res, err := r.gw.Call(ctx, call)
	if err != nil {
		return nil, res, err
	}
	var out struct {
		Completion mcp.CompletionResultDetails `json:"completion"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		return nil, res, err
	}
	return &mcp.CompleteResult{Completion: out.Completion}, res, nil
}
