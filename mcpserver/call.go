package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// callTool runs one tools/call through the gateway with the exact argument
// bytes of the request.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c := s.runCall(ctx, req)
	return c.result(ctx, s, req)
}

// callToolJSON is callTool for the door's fast path, the result encoded.
// An upstream's result goes out as its server's bytes with custody's
// _meta, not decoded into the SDK's types and encoded again (see
// rawPassThrough).
func (s *Server) callToolJSON(ctx context.Context, req *mcp.CallToolRequest) (json.RawMessage, error) {
	c := s.runCall(ctx, req)
	if c.err == nil && c.input == nil && c.pass && !wantsProof(req) {
		if out, ok := rawPassThrough(c.res); ok {
			return out, nil
		}
	}
	out, err := c.result(ctx, s, req)
	if err != nil {
		return nil, err
	}
	if out.Content == nil {
		out.Content = []mcp.Content{} // as the SDK does: never "null"
	}
	return json.Marshal(out)
}

// ranCall is what the gateway made of a tools/call.
type ranCall struct {
	res custody.Result
	err error
	// pass says res.Output is an upstream's MCP result, passed through.
	pass bool
	// input, when set, is the result that asks the client for input
	// instead.
	input *mcp.CallToolResult
}

// runCall runs req through the gateway, waiting for a held call's
// decision where its policy says so.
func (s *Server) runCall(ctx context.Context, req *mcp.CallToolRequest) ranCall {
	start := time.Now()
	name := req.Params.Name
	call := custody.Call{
		Trace: s.trace(req), Tool: name, Args: arguments(req.Params.Arguments), Actor: s.actor(req), Via: "mcp",
		Meta: relayedMeta(req.Params.Meta),
	}
	ctx = s.withCaller(ctx, req.Session, req.Params.Meta, call)
	res, err := s.gateway().Call(ctx, call)
	res, err = s.awaitHeld(ctx, req, call, res, err)
	if s.opts.Observe != nil {
		s.opts.Observe(name, outcome(err), time.Since(start))
	}
	t, ok := s.gateway().Tool(name)
	return ranCall{res: res, err: err, pass: ok && t.MCPResult}
}

// result is the CallToolResult the client gets: the refusal, or the
// result with its receipt (and its inclusion proof when asked for).
func (c ranCall) result(ctx context.Context, s *Server, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	if in, ok := c.err.(*inputRequired); ok {
		return in.result(c.res.Trace), nil
	}
	if c.err != nil {
		s.log.Info("mcp call refused", "tool", name, "kind", custody.ErrorKind(c.err), "err", c.err)
		return s.toolError(name, c.res.Trace, c.err), nil
	}
	if c.pass {
		out, err := passThrough(c.res)
		if err == nil && wantsProof(req) {
			s.addInclusion(ctx, out, uint64(c.res.Receipt.Seq))
		}
		return out, err
	}
	out := success(c.res)
	if wantsProof(req) {
		s.addInclusion(ctx, out, uint64(c.res.Receipt.Seq))
	}
	return out, nil
}

// relayedMeta is the part of a request's _meta that goes on to the tool:
// all of it but the keys under MetaPrefix, custody's own. Nil when
// nothing is left.
func relayedMeta(meta mcp.Meta) map[string]any { return custody.ForeignMeta(meta) }

// ProofMeta is the _meta flag by which a client asks for its call's
// inclusion proof; the result carries it under InclusionMeta once a
// signed checkpoint covers the call's entry, or says under
// InclusionPendingMeta why not yet.
const (
	ProofMeta            = "custody/proof"
	InclusionMeta        = "custody/inclusion"
	InclusionPendingMeta = "custody/inclusion_pending"
)

func wantsProof(req *mcp.CallToolRequest) bool {
	v, _ := req.Params.Meta[ProofMeta].(bool)
	return v
}

// addInclusion adds the inclusion proof of entry seq to out's _meta.
func (s *Server) addInclusion(ctx context.Context, out *mcp.CallToolResult, seq uint64) {
	if s.opts.Inclusion == nil {
		out.Meta[InclusionPendingMeta] = "proofs are not served by this instance"
		return
	}
	rec, err := s.opts.Inclusion(ctx, seq)
	if err != nil {
		if custody.ErrorKind(err) != custody.ENOTFOUND {
			s.log.Error("inclusion proof of a call", "seq", seq, "err", err)
		}
		out.Meta[InclusionPendingMeta] = fmt.Sprintf("no checkpoint covers entry %d yet: GET /v1/ledger/proof?seq=%d after the next one", seq, seq)
		return
	}
	out.Meta[InclusionMeta] = rec
}

// passThrough returns an upstream MCP tool's result as its server gave
// it, with the receipt added to _meta. The server's own _meta keys under
// "custody/" are dropped: only custody speaks for custody, so a server
// cannot hand an agent a receipt, trace or proof of its own making.
func passThrough(res custody.Result) (*mcp.CallToolResult, error) {
	var out mcp.CallToolResult
	if err := json.Unmarshal(res.Output, &out); err != nil {
		return nil, fmt.Errorf("decode the upstream result: %w", err)
	}
	if out.Meta = custody.ForeignMeta(out.Meta); out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta[TraceMeta] = res.Trace
	out.Meta["custody/receipt"] = map[string]any{"seq": res.Receipt.Seq, "hash": res.Receipt.Hash}
	return &out, nil
}

// rawPassThrough is passThrough on the result's bytes: the server's
// members as it sent them, its _meta less the keys under "custody/" and
// with the trace and receipt. It reports false for a result whose
// content is not a list, which passThrough then handles.
//
// Why: decoding a result into the SDK's types (v1.8) allocates a 32 KiB
// buffer per value decoded, twice per result, and encoding it again costs
// as much: on /mcp, 18% of what a governed upstream call allocated (bench
// upstream --door mcp, 2026-12-02). TestRawPassThroughMatchesSDK holds the
// two to the same result as the SDK reads it.
func rawPassThrough(res custody.Result) (json.RawMessage, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(res.Output, &members) != nil {
		return nil, false
	}
	if c := members["content"]; len(c) == 0 || c[0] != '[' {
		return nil, false
	}
	var meta map[string]json.RawMessage
	if m, ok := members["_meta"]; ok && string(m) != "null" {
		if json.Unmarshal(m, &meta) != nil {
			return nil, false
		}
	}
	meta = custody.ForeignMeta(meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	var err error
	if meta[TraceMeta], err = json.Marshal(res.Trace); err != nil {
		return nil, false
	}
	if meta["custody/receipt"], err = json.Marshal(map[string]any{"seq": res.Receipt.Seq, "hash": res.Receipt.Hash}); err != nil {
		return nil, false
	}
	if members["_meta"], err = json.Marshal(meta); err != nil {
		return nil, false
	}
	out, err := json.Marshal(members)
	return out, err == nil
}

// arguments returns the argument bytes as received. A call that sends no
// arguments is a call with an empty object, as MCP defines it; anything
// sent, including null, goes to the gateway unchanged.
func arguments(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage(`{}`)
	}
	return raw
}

// TraceMeta is the _meta key under which a client may name the trace of a
// call, and under which results report it.
const TraceMeta = "custody/trace_id"

// trace returns the trace of a call: the one the client names in _meta,
// else one per MCP session. A session is one chain of custody: a call
// repeated after its approval finds the approval, and calls-per-trace
// budgets count per session.
func (s *Server) trace(req *mcp.CallToolRequest) string {
	if t, ok := req.Params.Meta[TraceMeta].(string); ok && t != "" {
		return t
	}
	if req.Session != nil {
		if id := req.Session.ID(); id != "" {
			return "mcp-" + id
		}
	}
	return s.stdioTrace
}

// actor returns who made the call: the authenticated token's principal on
// HTTP, Options.Actor on stdio.
func (s *Server) actor(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return req.Extra.TokenInfo.UserID
	}
	return s.opts.Actor
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return custody.ErrorKind(err)
}

// routeUnknownTools sends tools/call requests for tools outside the
// envelope to the gateway, which refuses and records them, instead of the
// SDK's protocol error that would leave no evidence.
func (s *Server) routeUnknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if _, known := s.gateway().Tool(call.Params.Name); known {
			return next(ctx, method, req)
		}
		return s.callTool(ctx, call)
	}
}

// filterTools answers tools/list with the tools the caller may use.
func (s *Server) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if method != "tools/list" || err != nil || !ok {
			return res, err
		}
		actor := s.opts.Actor
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
			actor = extra.TokenInfo.UserID
		}
		kept := list.Tools[:0:0]
		for _, t := range list.Tools {
			if s.gateway().Allows(actor, t.Name) {
				kept = append(kept, t)
			}
		}
		out := *list
		out.Tools = kept
		return &out, nil
	}
}

// success is the result of a call that ran: the output as text, and as
// structured content when it is a JSON object. The receipt rides in _meta.
func success(res custody.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(res.Output)}},
		Meta: mcp.Meta{
			TraceMeta:         res.Trace,
			"custody/receipt": map[string]any{"seq": res.Receipt.Seq, "hash": res.Receipt.Hash},
		},
	}
	if isObject(res.Output) {
		out.StructuredContent = res.Output
	}
	return out
}

func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// ErrorMeta is the _meta key under which a tool error carries its
// structured form {"kind","message","violations"?,...} for every tool.
const ErrorMeta = "custody/error"

// toolError maps any error of a call to an MCP tool error: the one
// function that does. The text names the kind, the safe message, the
// violations and, for a pending approval, what the agent must do next.
// Internal detail stays in the log. The structured form rides in _meta
// under ErrorMeta, and as structured content {"error":{...}} for tools
// without an output schema: clients check structured content against the
// output schema even on errors.
func (s *Server) toolError(tool, trace string, err error) *mcp.CallToolResult {
	d := custody.DetailOf(err)
	d.TraceID = trace
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: detailText(d, tool, s.decideAt(d.ApprovalRequestID))}},
		Meta:    mcp.Meta{ErrorMeta: d, TraceMeta: trace},
	}
	s.mu.RLock()
	noSchema, known := s.structured[tool]
	s.mu.RUnlock()
	if noSchema || !known {
		res.StructuredContent = map[string]any{"error": d}
	}
	return res
}

// decideAt tells where a human decides approval id: the console's page
// of it, and the CLI command; "" for no approval.
func (s *Server) decideAt(id string) string {
	if id == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("Tell the user an operator must decide it")
	if s.opts.ConsoleURL != "" {
		fmt.Fprintf(&b, " in the custody console: %s/#/approvals/%s, or", strings.TrimRight(s.opts.ConsoleURL, "/"), url.PathEscape(id))
	}
	fmt.Fprintf(&b, " with: custody approvals approve %s", id)
	if s.opts.DataDir != "" {
		fmt.Fprintf(&b, " --data %s", s.opts.DataDir)
	}
	b.WriteString("\n")
	return b.String()
}

// detailText renders d for a language model: short lines, where a human
// decides a held call, the next step last.
func detailText(d custody.ErrorDetail, tool, decideAt string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", d.Kind, d.Message)
	for _, v := range d.Violations {
		at := v.Instance
		if at == "" {
			at = "(the arguments)"
		}
		fmt.Fprintf(&b, "- %s: %s\n", at, v.Message)
	}
	if d.ApprovalRequestID != "" {
		fmt.Fprintf(&b, "approval_request_id: %s\n", d.ApprovalRequestID)
	}
	if d.ExpiresAt != "" {
		fmt.Fprintf(&b, "expires_at: %s\n", d.ExpiresAt)
	}
	if d.TraceID != "" {
		fmt.Fprintf(&b, "trace_id: %s\n", d.TraceID)
	}
	if d.RetryAfter > 0 {
		fmt.Fprintf(&b, "retry_after: %d seconds\n", d.RetryAfter)
	}
	if d.Kind == custody.EPENDING {
		b.WriteString(decideAt)
	}
	if d.Outcome == custody.OutcomeUnknown {
		b.WriteString("outcome: unknown\nThe call may have taken effect. Do not repeat it blindly: check whether it did, then decide.")
		return b.String()
	}
	b.WriteString(nextStep(d.Kind, tool))
	return b.String()
}

// nextStep tells the agent what to do about a refusal of kind.
func nextStep(kind, tool string) string {
	switch kind {
	case custody.EPENDING:
		return fmt.Sprintf("A human operator must approve this exact action. Do not change the arguments: "+
			"wait for the decision, then call %s again with exactly the same arguments. "+
			"The approved call runs once; a declined or expired request will not run.", tool)
	case custody.EINVALID:
		return "The call was refused, not repaired: fix the arguments to match the tool's input schema and call again."
	case custody.EEXPIRED:
		return "The approval window passed. Call again with the same arguments to ask for a new approval."
	case custody.EDENIED:
		return "The call is outside what this agent may do; repeating it will not help."
	case custody.EUNAVAILABLE:
		return "The gateway could not complete the call. Try again later."
	default:
		return "The call did not succeed and no result is released."
	}
}
