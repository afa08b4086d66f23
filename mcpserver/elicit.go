package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

// A held call of a tool whose policy names the client among its approvers
// is put to the user of the client that made it, through
// elicitation/create in form mode, when that client declared elicitation
// (gate.Gateway.AwaitClientDecision has the rule). The form shows the
// exact action and asks for one choice, approve or decline; declining or
// dismissing the form declines. The question goes on the call's own
// stream and is withdrawn (notifications/cancelled) when an operator
// decides first.

// DecisionField is the one field of the approval form: its value is
// DecisionApprove or DecisionDecline.
const (
	DecisionField   = "decision"
	DecisionApprove = "approve"
	DecisionDecline = "decline"
)

// decisionSchema is the form's requestedSchema: one required choice.
const decisionSchema = `{"type":"object","properties":{"` + DecisionField + `":{"type":"string","title":"Your decision",` +
	`"description":"approve runs this call once, exactly as shown; decline refuses it",` +
	`"enum":["` + DecisionApprove + `","` + DecisionDecline + `"]}},"required":["` + DecisionField + `"]}`

// clientApproval returns the client of req as an approver of call once it
// is held, nil when it may not be asked: the tool's policy does not name
// the client, or the client declared no form elicitation.
func (s *Server) clientApproval(req *mcp.CallToolRequest, call custody.Call) *gate.ClientApproval {
	if req.Session == nil || !s.gateway().ClientApproves(call.Tool) || !elicitsForms(req.ClientCapabilities()) {
		return nil
	}
	c := &gate.ClientApproval{Within: s.opts.MaxApprovalWait,
		Ask: func(ctx context.Context, q gate.ClientQuestion) (string, error) { return askForm(ctx, req.Session, q) }}
	if info := req.ClientInfo(); info != nil {
		c.Name, c.Version = info.Name, info.Version
	}
	return c
}

// elicitsForms reports whether a client of caps (its initialize's, or on
// 2026-07-28 its request's) declared form elicitation: an elicitation
// capability with form, or with neither form nor url (the capability
// before modes).
func elicitsForms(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// askForm puts q to the user of ss as a form and returns their decision.
func askForm(ctx context.Context, ss *mcp.ServerSession, q gate.ClientQuestion) (string, error) {
	res, err := ss.Elicit(ctx, form(q))
	if err != nil {
		return "", err
	}
	return formDecision(res)
}

// form is the approval form of q.
func form(q gate.ClientQuestion) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: q.Message, RequestedSchema: json.RawMessage(decisionSchema)}
}

// formDecision returns the decision of a user's answer to the form.
func formDecision(res *mcp.ElicitResult) (string, error) {
	switch res.Action {
	case "decline", "cancel":
		return approval.Decline, nil
	case "accept":
		switch res.Content[DecisionField] {
		case DecisionApprove:
			return approval.Approve, nil
		case DecisionDecline:
			return approval.Decline, nil
		}
		return "", fmt.Errorf("the client accepted the form without a %q of %q or %q", DecisionField, DecisionApprove, DecisionDecline)
	}
	return "", fmt.Errorf("the client answered the form with action %q", res.Action)
}

// From protocol 2026-07-28 a server may not send a client requests while
// it serves one (SEP-2322): the held call's result asks for the form
// instead (inputRequests, under ApprovalInput, with the approval's id as
// requestState), and the client calls again with its user's answer
// (inputResponses), which decides the approval before the call goes on.
// An operator's decision in between stands, and the answer is ignored.

// ApprovalInput is the key of the approval form among a held call's
// inputRequests.
const ApprovalInput = "custody/approval"

// multiRoundTripVersion is the first protocol version whose clients are
// asked through a result's inputRequests.
const multiRoundTripVersion = "2026-07-28"

// multiRoundTrip reports whether the client of req is asked through
// inputRequests: the protocol version of its session, or on 2026-07-28 of
// the request itself.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= multiRoundTripVersion
}

// inputRequired is awaitHeld's answer when the call's result is to ask
// the client for the approval form: callTool returns it as the result.
// It wraps the refusal that holds the call, which it is for metrics.
type inputRequired struct {
	form  *mcp.ElicitParams
	state string
	held  error
}

func (*inputRequired) Error() string    { return "the held call asks the client's user to decide it" }
func (in *inputRequired) Unwrap() error { return in.held }

// result is the input-required result of a call in trace.
func (in *inputRequired) result(trace string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{ApprovalInput: in.form}, RequestState: in.state,
		Meta: mcp.Meta{TraceMeta: trace}}
}

// roundTrip answers held call, which approval id holds, for a client asked
// through inputRequests: decided as the answer it brought back for id, or
// an inputRequired asking for one. asked is false when the user may not
// be asked: the call is then answered as without the client.
func (s *Server) roundTrip(ctx context.Context, req *mcp.CallToolRequest, call custody.Call, id string, held error, c gate.ClientApproval) (res custody.Result, asked bool, err error) {
	if answer, given := req.Params.InputResponses[ApprovalInput].(*mcp.ElicitResult); given && req.Params.RequestState == id {
		verdict, err := formDecision(answer)
		if err != nil {
			s.log.Info("mcp: the client's answer to the approval form", "approval_request_id", id, "err", err)
			return custody.Result{}, false, nil
		}
		c.Ask = func(context.Context, gate.ClientQuestion) (string, error) { return verdict, nil }
		res, err := s.gateway().AwaitClientDecision(ctx, call, id, 0, held, c)
		return res, true, err
	}
	q, err := s.gateway().ClientQuestion(ctx, call, id)
	if err != nil {
		s.log.Info("mcp: the client is not asked to decide a held call", "approval_request_id", id, "err", err)
		return custody.Result{}, false, nil
	}
	return custody.Result{Trace: call.Trace}, true, &inputRequired{form: form(q), state: id, held: held}
}
