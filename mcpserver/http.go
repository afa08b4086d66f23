package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
	"github.com/custody-dev/custody/ledger"
)

// maxBodyBytes bounds a request body, as the SDK would.
const maxBodyBytes = mcp.DefaultMaxRequestBodyBytes

// HTTPHandler returns the streamable HTTP handler (mount it at /mcp).
//
// Before the SDK sees a request, the door
//   - refuses a browser Origin that is neither the server's own (the
//     request's Host) nor one of Options.AllowedOrigins: 403; a request
//     without Origin (any non-browser client) passes;
//   - requires a bearer token that authenticate accepts: it returns the
//     actor recorded for the token's calls, or a custody error of kind
//     EUNAUTHORIZED (no or an unknown token: 401 with WWW-Authenticate:
//     Bearer) or EDENIED (a token that may not use MCP: 403). Refusals
//     are in custody's one error shape, as on /v1;
//   - refuses a POST body that is not one strict JSON document (duplicate
//     members, invalid UTF-8, trailing data, ...: what ledger.Check
//     refuses) with the JSON-RPC parse error -32700 saying what and where,
//     so that the SDK's lenient decoder never picks one of two names.
//
// A plain tools/call on an established session is then answered by the
// door itself (fastCall); every other request goes to the SDK.
//
// Sessions are bound to the actor that opened them, closed after
// Options.SessionIdleTimeout without a request, and capped per actor
// (Options.MaxSessionsPerAgent). The door answers its calls as
// application/json; the SDK answers a request as an event stream, on
// which what an upstream sends while it works (progress, log messages,
// its requests of the client) goes before the response.
func (s *Server) HTTPHandler(authenticate func(token string) (actor string, err error)) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		actor, _ := r.Context().Value(actorKey{}).(string)
		if actor == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: actor}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{Logger: s.opts.Logger, MaxRequestBodyBytes: maxBodyBytes})
	return &door{
		s:            s,
		authenticate: authenticate,
		origins:      originSet(s.opts.AllowedOrigins),
		sdk:          auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h),
	}
}

// actorKey carries the authenticated actor from the door to the SDK's
// token check.
type actorKey struct{}

// door is custody's edge in front of the SDK's streamable HTTP handler.
type door struct {
	s            *Server
	authenticate func(token string) (string, error)
	origins      map[string]bool
	sdk          http.Handler
}

func (d *door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); !d.originAllowed(origin, r.Host) {
		httpjson.WriteError(w, custody.Errorf(custody.EDENIED,
			"requests from the origin %q may not use /mcp: it is not this server's origin nor an allowed one", origin))
		return
	}
	actor, err := d.actor(r)
	if err != nil {
		if custody.ErrorKind(err) == custody.EUNAUTHORIZED {
			w.Header().Set("WWW-Authenticate", d.challenge(err))
		}
		httpjson.WriteError(w, err)
		return
	}
	if r.Method == http.MethodPost && isJSON(r.Header.Get("Content-Type")) {
		body, ok := strictBody(w, r)
		if !ok || d.fastCall(w, r, actor, body) {
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" && needsSession(body) {
			writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
				"Bad Request: a request other than initialize needs the Mcp-Session-Id header of an initialized session (or, on protocol 2026-07-28 and later, its _meta)")
			return
		}
		// A cancellation of a call the door runs itself: the SDK, which
		// knows only its own, answers the notification all the same.
		if _, known, _ := d.s.sessions.lookup(r.Header.Get("Mcp-Session-Id")); known == actor {
			d.s.inflight.cancelled(r.Header.Get("Mcp-Session-Id"), body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	d.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, actor)))
}

// actor authenticates the request's bearer token.
func (d *door) actor(r *http.Request) (string, error) {
	// The SDK's token check reads the header the same way.
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
	}
	actor, err := d.authenticate(f[1])
	switch {
	case err != nil:
		if k := custody.ErrorKind(err); k != custody.EUNAUTHORIZED && k != custody.EDENIED {
			return "", custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
		}
		return "", err
	case actor == "":
		return "", custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
	}
	return actor, nil
}

// originAllowed reports whether a request from origin may proceed: no
// Origin (not a browser), the server's own (its host is the request's
// Host) or a configured one.
func (d *door) originAllowed(origin, host string) bool {
	if origin == "" || d.origins[normalOrigin(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
}

func originSet(list []string) map[string]bool {
	set := make(map[string]bool, len(list))
	for _, o := range list {
		set[normalOrigin(o)] = true
	}
	return set
}

// normalOrigin is an origin as compared: lower case, no trailing slash.
func normalOrigin(o string) string { return strings.ToLower(strings.TrimSuffix(o, "/")) }

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// strictBody reads a POST body and checks that it is one strict JSON
// document (a message or a batch). On failure it answers with a JSON-RPC
// error and returns false.
func strictBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
			return nil, false
		}
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "parse error: the request body could not be read")
		return nil, false
	}
	// Arguments that are not strict JSON in a strict envelope go on to the
	// gateway, which refuses them on the ledger, as /v1 does.
	if err := httpjson.CheckEnvelope(body, ledger.Check, "params", "arguments"); err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "parse error: the request body is not strict JSON: "+err.Error())
		return nil, false
	}
	if err := exactNames(body); err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	return body, true
}

// rpcMembers and callParams are the member names JSON-RPC and tools/call
// define, as they are spelt.
var (
	rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	callParams = []string{"name", "arguments", "_meta"}
)

// exactNames refuses a message (or a message of a batch) whose members,
// or whose params' members, a case-insensitive decoder could read as
// another: two names equal but for case, or a name spelt otherwise than
// JSON-RPC or tools/call spells it ("METHOD"). encoding/json, which the
// SDK and the fast path decode with, matches names regardless of case and
// lets the last of two such members win; the strict check cannot see
// them, as the names differ.
func exactNames(body []byte) error {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		batch = []json.RawMessage{body}
	}
	for _, msg := range batch {
		var top map[string]json.RawMessage
		if json.Unmarshal(msg, &top) != nil {
			continue // not an object: the SDK answers it
		}
		if err := foldedNames(top, rpcMembers, ""); err != nil {
			return err
		}
		var params map[string]json.RawMessage
		if json.Unmarshal(top["params"], &params) == nil {
			if err := foldedNames(params, callParams, "params/"); err != nil {
				return err
			}
		}
	}
	return nil
}

// foldedNames refuses two members of obj whose names are equal but for
// case, and a member spelt otherwise than the one of known it folds to.
func foldedNames(obj map[string]json.RawMessage, known []string, where string) error {
	seen := make(map[string]string, len(obj))
	for name := range obj {
		folded := foldKey(name)
		if other, dup := seen[folded]; dup {
			return fmt.Errorf("the members %q and %q of %s differ only in case", where+other, where+name, orMessage(where))
		}
		seen[folded] = name
		for _, k := range known {
			if strings.EqualFold(name, k) && name != k {
				return fmt.Errorf("member %q must be spelt %q", where+name, where+k)
			}
		}
	}
	return nil
}

// foldKey returns name with every rune replaced by the smallest of its
// case folding orbit, so that two names strings.EqualFold holds equal
// (and so encoding/json, which also folds "ſ" to "s" and the Kelvin sign
// to "k") have the same key.
func foldKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

func orMessage(where string) string {
	if where == "" {
		return "the message"
	}
	return "the params"
}

// writeRPCError answers with a JSON-RPC error response without an id:
// the request's could not be read.
func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{code, message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// statelessVersion is the first protocol version whose requests carry
// their session's state in _meta instead of an Mcp-Session-Id.
const statelessVersion = "2026-07-28"

// needsSession reports whether body is a request that a stateful protocol
// version serves only within a session: a call other than initialize,
// whose _meta does not name a stateless protocol version. The streamable
// HTTP transport answers such a request without a session 400.
func needsSession(body []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.ID == nil || msg.Method == "" || msg.Method == "initialize" {
		return false // a batch, a notification, a response or initialize: the SDK's
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v < statelessVersion
}
