package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// A tools/call refused pending_approval whose tool's policy says
// approvalWait stays open for the operator's decision, and answers in the
// same call: the result once approved, the refusal once declined or
// expired (gate.Gateway.AwaitDecision). While it waits, a client that gave
// a progressToken gets a progress notification every ProgressEvery naming
// the approval and where to decide it, so that it keeps the call alive.
// The wait is bounded by approvalWait, by Options.MaxApprovalWait (the
// HTTP door's write timeout) and by the client's cancellation. A tool
// whose approvers name the client has its held call put to a client that
// declared elicitation, approvalWait or not (elicit.go).

// ProgressEvery is how often a held call tells its client it still waits.
const ProgressEvery = 5 * time.Second

// awaitHeld is callTool's hook: it waits for the decision on the approval
// that holds call, when the tool's policy lets it, and returns the
// answer; otherwise it returns res and err as they are.
func (s *Server) awaitHeld(ctx context.Context, req *mcp.CallToolRequest, call custody.Call, res custody.Result, err error) (custody.Result, error) {
	id, wait := s.gateway().Held(call, err)
	if s.opts.MaxApprovalWait > 0 {
		wait = min(wait, s.opts.MaxApprovalWait)
	}
	if id == "" {
		return res, err
	}
	call.Trace = res.Trace
	client := s.clientApproval(req, call)
	if client != nil && multiRoundTrip(req) {
		if out, asked, aerr := s.roundTrip(ctx, req, call, id, err, *client); asked {
			return out, aerr
		}
		client = nil
	}
	if wait <= 0 && client == nil {
		return res, err
	}
	stop := s.progress(ctx, req, id, cmp.Or(wait, s.opts.MaxApprovalWait))
	defer stop()
	if client != nil {
		return s.gateway().AwaitClientDecision(ctx, call, id, wait, err, *client)
	}
	return s.gateway().AwaitDecision(ctx, call, id, wait, err)
}

// progress sends a progress notification at once and every
// ProgressEvery while the call waits, when the client gave a
// progressToken, until the returned function is called.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, id string, wait time.Duration) func() {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ProgressEvery)
		defer tick.Stop()
		until := time.Now().Add(wait)
		for n := 1; ; n++ {
			msg := s.waitingText(id, time.Until(until))
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(n)}); err != nil && ctx.Err() == nil {
				s.log.Debug("mcp: progress of a held call", "approval_request_id", id, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitingText is the message of a held call's progress notification; left
// is not told when not positive (a wait bounded by nothing of its own).
func (s *Server) waitingText(id string, left time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for approval %s", id)
	if left > 0 {
		fmt.Fprintf(&b, " (up to %s more)", left.Round(time.Second))
	}
	if s.opts.ConsoleURL != "" {
		fmt.Fprintf(&b, "; decide at %s/#/approvals/%s", strings.TrimRight(s.opts.ConsoleURL, "/"), id)
	} else {
		fmt.Fprintf(&b, "; decide with: custody approvals approve %s", id)
	}
	return b.String()
}
