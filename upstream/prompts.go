package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// promptSchema is the contract of a prompt's arguments: an object of the
// strings it declares, those it requires required, nothing else.
func promptSchema(p *mcp.Prompt) ([]byte, error) {
	props := map[string]any{}
	required := []string{}
	for _, a := range p.Arguments {
		if a == nil || a.Name == "" {
			return nil, errors.New("an argument has no name")
		}
		props[a.Name] = map[string]any{"type": "string"}
		if a.Required {
			required = append(required, a.Name)
		}
	}
	return json.Marshal(map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

// getTool is the route of one governed prompt. It is admitted only while
// the prompt's pin is not in quarantine.
func (r *Relay) getTool(o PromptOffer) gate.Tool {
	approval := o.Policy.Approval
	if approval == "" {
		approval = custody.NotRequired
	}
	name, up := o.Exposed, o.Upstream
	return gate.Tool{
		Spec: custody.ToolSpec{
			Name: GetRoute + name, Description: "prompts/get of " + name,
			Input: ref(name, "prompt-arguments"), Output: relayRef(relayGetOutput),
			Access: custody.Read, Effect: custody.EffectNone, Approval: approval,
		},
		Handler: r.get(o),
		Admit:   r.admit(name, PromptDefinitionOf(o.Prompt)),
		Refs: func() map[string]string {
			return map[string]string{RefUpstream: up, RefPromptDefinition: r.pins.Pinned(name)}
		},
	}
}

// get is the handler of a prompt's route.
func (r *Relay) get(o PromptOffer) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		box, err := relayedOf(ctx)
		if err != nil {
			return nil, err
		}
		var args map[string]string
		if err := json.Unmarshal(c.Args, &args); err != nil {
			return nil, err
		}
		conn := r.set.conn(o.Upstream)
		if conn == nil {
			return nil, fmt.Errorf("upstream %q is not configured", o.Upstream)
		}
		res, err := conn.GetPrompt(ctx, o.Prompt.Name, args)
		if err != nil {
			return nil, err
		}
		out := &mcp.GetPromptResult{Description: res.Description, Meta: withoutCustodyMeta(res.Meta)}
		for _, m := range res.Messages {
			if m != nil {
				out.Messages = append(out.Messages, &mcp.PromptMessage{Role: m.Role, Content: contentWithoutCustodyMeta(m.Content)})
			}
		}
		sum, err := digest(out.Messages)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", o.Exposed, err)
		}
		box.get = out
		return json.Marshal(map[string]any{"prompt": o.Exposed, "upstream": o.Upstream, "name": o.Prompt.Name,
			"messages_sha256": sum, "messages": len(out.Messages)})
	}
}

// GetPrompt gets the prompt exposed as name with args for call (its
// Trace, Actor and Via), through the gateway, as ReadResource reads.
func (r *Relay) GetPrompt(ctx context.Context, call custody.Call, name string, args map[string]string) (*mcp.GetPromptResult, custody.Result, error) {
	if args == nil {
		args = map[string]string{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, custody.Result{}, err
	}
	box := &relayed{}
	call.Tool, call.Args = GetRoute+name, raw
	res, err := r.gw.Call(withRelayed(ctx, box), call)
	if err != nil {
		return nil, res, err
	}
	if box.get == nil {
		return nil, res, errors.New("upstream relay: the get left no result")
	}
	return box.get, res, nil
}

// admit is the gateway's check of a prompt's route: its pin must not be
// in quarantine, and the pinned arguments must be those whose contract was
// compiled at start (a re-pin with new arguments waits for a restart, as a
// tool's new schemas do).
func (r *Relay) admit(name string, loaded Definition) func(ctx context.Context) error {
	quarantine := r.pins.Admit(name)
	return func(ctx context.Context) error {
		if err := quarantine(ctx); err != nil {
			return err
		}
		pinned, ok := r.pins.Definition(name)
		a, _ := json.Marshal(pinned.Arguments)
		b, _ := json.Marshal(loaded.Arguments)
		if ok && !jsonEqual(a, b) {
			return custody.Errorf(custody.EUNAVAILABLE,
				"prompt %q was re-pinned with new arguments while custody ran: restart custody to load them", name)
		}
		return nil
	}
}

// contentWithoutCustodyMeta returns a copy of c without the _meta keys
// under custody.MetaPrefix, an embedded resource's included.
func contentWithoutCustodyMeta(c mcp.Content) mcp.Content {
	switch v := c.(type) {
	case *mcp.TextContent:
		cp := *v
		cp.Meta = withoutCustodyMeta(v.Meta)
		return &cp
	case *mcp.ImageContent:
		cp := *v
		cp.Meta = withoutCustodyMeta(v.Meta)
		return &cp
	case *mcp.AudioContent:
		cp := *v
		cp.Meta = withoutCustodyMeta(v.Meta)
		return &cp
	case *mcp.ResourceLink:
		cp := *v
		cp.Meta = withoutCustodyMeta(v.Meta)
		return &cp
	case *mcp.EmbeddedResource:
		cp := *v
		cp.Meta = withoutCustodyMeta(v.Meta)
		if v.Resource != nil {
			r := *v.Resource
			r.Meta = withoutCustodyMeta(v.Resource.Meta)
			cp.Resource = &r
		}
		return &cp
	}
	return c
}
