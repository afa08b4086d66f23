package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/downstream"
	"github.com/custody-dev/custody/gate"
)

// A server's request of the client (sampling/createMessage,
// elicitation/create, roots/list: see client.go) is a call of a route of
// the relay's gateway, AskRoute + FEATURE + ":" + SERVER, by the actor and
// in the trace of the call in flight that it is asked for. The route of a
// feature the server's ClientFeatures do not allow is not in the
// envelope: the request is denied and recorded like any call outside it.
// The entry records the request as its arguments and, of the client's
// answer, what it did and the SHA-256 of what it said: a user's
// elicitation answer or a model's sampled text is not kept on the ledger.
const AskRoute = "client/"

// askRoute is the route of one feature of one server.
func askRoute(feature, server string) string { return AskRoute + feature + ":" + server }

// Contract files of the ask routes: the request is any object, and the
// record of the answer is fixed.
const (
	relayAskInput  = "upstream.relay.ask.input.json"
	relayAskOutput = "upstream.relay.ask.output.json"
)

var (
	askInputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`)
	// askOutputSchema: action is the elicitation's (accept, decline,
	// cancel), "answered" for sampling and roots.
	askOutputSchema = []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"properties":{"upstream":{"type":"string"},"feature":{"type":"string"},"action":{"type":"string"},
"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"}},
"required":["upstream","feature","action","sha256"],"additionalProperties":false}`)
)

// askDeadline bounds a request of the client: a user may take minutes to
// answer an elicitation, and the call it is asked for bounds it too.
const askDeadline = 10 * time.Minute

// asked carries a request past the gateway: who to ask, how, and, once
// asked, the answer, which the entry records only the digest of.
type asked struct {
	caller *downstream.Caller
	do     func(ctx context.Context) (any, error)
	answer any
}

type askedKey struct{}

// askTools are the routes of the client features each server may use.
func (s *Set) askTools() []gate.Tool {
	var out []gate.Tool
	for _, c := range s.conns {
		for _, f := range []string{FeatureRoots, FeatureSampling, FeatureElicitation} {
			if c.srv.allows(f) {
				out = append(out, askTool(f, c.Name()))
			}
		}
	}
	return out
}

func askTool(feature, server string) gate.Tool {
	return gate.Tool{
		Spec: custody.ToolSpec{
			Name:        askRoute(feature, server),
			Description: "the " + feature + " requests of server " + server + ", asked of the client whose call is in flight",
			Input:       relayRef(relayAskInput), Output: relayRef(relayAskOutput),
			Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
		},
		Handler:  askHandler(feature, server),
		Deadline: askDeadline,
	}
}

// askHandler asks the client and records what it answered.
func askHandler(feature, server string) gate.Handler {
	return func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
		box, ok := ctx.Value(askedKey{}).(*asked)
		if !ok {
			return nil, custody.Errorf(custody.EINVALID, "a client route is called by an upstream server's request only")
		}
		if box.caller != nil && !box.caller.Declared(feature) {
			return nil, custody.Errorf(custody.EUNAVAILABLE, "server %q asked for %s, which the client did not declare", server, feature)
		}
		answer, err := box.do(ctx)
		if err != nil {
			return nil, custody.Errorf(custody.EUNAVAILABLE, "%s for server %q: %v", feature, server, err)
		}
		sum, err := digest(answer)
		if err != nil {
			return nil, fmt.Errorf("%s for server %q: %w", feature, server, err)
		}
		box.answer = answer
		return json.Marshal(map[string]string{"upstream": server, "feature": feature, "action": actionOf(answer), "sha256": sum})
	}
}

// actionOf is what the client did: an elicitation's action, else
// "answered".
func actionOf(answer any) string {
	if r, ok := answer.(*mcp.ElicitResult); ok && r.Action != "" {
		return r.Action
	}
	return "answered"
}

// ask is the AskFunc of every Conn of s: the request as a call of its
// route on the relay's gateway.
func (s *Set) ask(ctx context.Context, server, feature string, params any, caller *downstream.Caller,
	do func(ctx context.Context) (any, error)) (any, error) {
	r := s.builtRelay(ctx)
	if r == nil {
		return nil, errors.New("custody relays no requests of servers to clients")
	}
	args, err := json.Marshal(params)
	if err != nil || string(args) == "null" {
		args = []byte(`{}`)
	}
	call := custody.Call{Tool: askRoute(feature, server), Args: args, Via: "mcp",
		Trace: "upstream-" + server, Actor: "upstream:" + server}
	if caller != nil {
		call.Trace, call.Actor = caller.Trace, caller.Actor
	}
	box := &asked{caller: caller, do: do}
	if _, err := r.gw.Call(context.WithValue(ctx, askedKey{}, box), call); err != nil {
		return nil, err
	}
	if box.answer == nil {
		return nil, errors.New("the request left no answer")
	}
	return box.answer, nil
}

// relayWait bounds how long a server's request waits for the relay that
// records it: a server may ask as soon as it is initialized, while custody
// is still building its gateways.
const relayWait = 30 * time.Second

// builtRelay returns the relay, waiting for it to be built for at most
// relayWait; nil when there is none.
func (s *Set) builtRelay(ctx context.Context) *Relay {
	timer := time.NewTimer(relayWait)
	defer timer.Stop()
	select {
	case <-s.relayBuilt:
	case <-ctx.Done():
	case <-timer.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.relay
}
