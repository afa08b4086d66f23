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

// Contract files of the relay's routes: a read's arguments and what its
// entry records of the content; a get's record (each prompt's arguments
// have a contract of their own, file(exposed, "prompt-arguments")).
const (
	relayReadInput  = "upstream.relay.read.input.json"
	relayReadOutput = "upstream.relay.read.output.json"
	relayGetOutput  = "upstream.relay.get.output.json"
)

var (
	readInputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`)
	readOutputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"upstream":{"type":"string"},"uri":{"type":"string"},"exposed_uri":{"type":"string"},
"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"},"size":{"type":"integer","minimum":0},"contents":{"type":"integer","minimum":0}},
"required":["upstream","uri","exposed_uri","sha256","size","contents"],"additionalProperties":false}`)
	getOutputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"prompt":{"type":"string"},"upstream":{"type":"string"},"name":{"type":"string"},
"messages_sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"},"messages":{"type":"integer","minimum":0}},
"required":["prompt","upstream","name","messages_sha256","messages"],"additionalProperties":false}`)
)

// relayRef is how a route names one of the relay's contract files.
func relayRef(file string) string { return "urn:custody:contract:" + file + "#" }

// relayContracts adds the contracts of the relay's routes to out.
func (s *Set) relayContracts(out map[string][]byte) error {
	if !s.Relays() {
		return nil
	}
	out[relayReadInput], out[relayReadOutput], out[relayGetOutput] = readInputSchema, readOutputSchema, getOutputSchema
	out[relayCompleteInput], out[relayCompleteOutput] = completeInputSchema, completeOutputSchema
	out[relaySubscribeOutput] = subscribeOutputSchema
	out[relayAskInput], out[relayAskOutput] = askInputSchema, askOutputSchema
	for _, o := range s.PromptOffers() {
		if o.Key == "" {
			continue
		}
		schema, err := promptSchema(o.Prompt)
		if err != nil {
			return fmt.Errorf("prompt %s: %w", o.Exposed, err)
		}
		out[file(o.Exposed, "prompt-arguments")] = schema
	}
	return nil
}

// relayed carries what a route's handler got from the upstream past the
// gateway, which records only its digest: the caller takes it once the
// entry is durable.
type relayed struct {
	read *mcp.ReadResourceResult
	get  *mcp.GetPromptResult
}

type relayedKey struct{}

// withRelayed returns ctx carrying box for the route's handler.
func withRelayed(ctx context.Context, box *relayed) context.Context {
	return context.WithValue(ctx, relayedKey{}, box)
}

// relayedOf returns the box of ctx.
func relayedOf(ctx context.Context) (*relayed, error) {
	box, ok := ctx.Value(relayedKey{}).(*relayed)
	if !ok {
		return nil, custody.Errorf(custody.EINVALID, "a relay route is called through the MCP door's resources/read or prompts/get only")
	}
	return box, nil
}

// readTool is the route of the resources a resource key governs.
func (r *Relay) readTool(key string, p ResourcePolicy) gate.Tool {
	approval := p.Approval
	if approval == "" {
		approval = custody.NotRequired
	}
	return gate.Tool{
		Spec: custody.ToolSpec{
			Name: ReadRoute + key, Description: "resources/read of the resources " + key + " governs",
			Input: relayRef(relayReadInput), Output: relayRef(relayReadOutput),
			Access: custody.Read, Effect: custody.EffectNone, Approval: approval,
		},
		Handler: r.read(p.maxBytes()),
		Refs:    staticRefs(map[string]string{RefResourcePolicy: key}),
	}
}

// read is the handler of a read route: it reads the resource from the
// server that offers it and refuses one over maxBytes.
func (r *Relay) read(maxBytes int64) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		box, err := relayedOf(ctx)
		if err != nil {
			return nil, err
		}
		var args struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(c.Args, &args); err != nil {
			return nil, err
		}
		server, uri, ok := r.set.routeURI(args.URI)
		conn := r.set.conn(server)
		if !ok || conn == nil {
			return nil, custody.Errorf(custody.ENOTFOUND, "resource %q: no upstream offers it (URIs are SERVER+URI)", args.URI)
		}
		res, err := conn.ReadResource(ctx, uri)
		if err != nil {
			return nil, err
		}
		size := contentSize(res.Contents)
		if size > maxBytes {
			return nil, custody.Errorf(custody.EDENIED, "resource %q is %d bytes, over the %d bytes its policy allows (maxBytes)", args.URI, size, maxBytes)
		}
		out := &mcp.ReadResourceResult{Meta: withoutCustodyMeta(res.Meta)}
		for _, rc := range res.Contents {
			if rc == nil {
				continue
			}
			cp := *rc
			cp.URI, cp.Meta = r.set.exposedURI(server, rc.URI), withoutCustodyMeta(rc.Meta)
			out.Contents = append(out.Contents, &cp)
		}
		sum, err := digest(out.Contents)
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", args.URI, err)
		}
		box.read = out
		return json.Marshal(map[string]any{"upstream": server, "uri": uri, "exposed_uri": args.URI,
			"sha256": sum, "size": size, "contents": len(out.Contents)})
	}
}

// contentSize is the bytes of a read's contents: texts and decoded blobs.
func contentSize(cs []*mcp.ResourceContents) int64 {
	var n int64
	for _, c := range cs {
		if c != nil {
			n += int64(len(c.Text) + len(c.Blob))
		}
	}
	return n
}

// ReadResource reads the resource exposed as uri for call (its Trace,
// Actor and Via; Tool and Args are the relay's): the route of the key
// that governs uri, through the gateway. The result's contents carry
// exposed URIs; the custody.Result is the entry that recorded the read.
// A refusal is a *custody.Error carrying its receipt, and nothing is
// returned whenever the entry could not be written.
func (r *Relay) ReadResource(ctx context.Context, call custody.Call, uri string) (*mcp.ReadResourceResult, custody.Result, error) {
	route := ReadRoute + uri
	if _, key, ok := r.set.cfg.Resources.For(uri); ok {
		route = ReadRoute + key
	}
	args, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return nil, custody.Result{}, err
	}
	box := &relayed{}
	call.Tool, call.Args = route, args
	res, err := r.gw.Call(withRelayed(ctx, box), call)
	if err != nil {
		return nil, res, err
	}
	if box.read == nil {
		return nil, res, errors.New("upstream relay: the read left no result")
	}
	return box.read, res, nil
}
