package brain

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Validator checks the exact bytes of a document against a schema named by
// ref: nil when valid, EINVALID with violations when not, ENOTFOUND for an
// unknown ref. *contract.Registry is one.
type Validator interface {
	Validate(ref string, raw []byte) error
}

// Dialer returns a fresh transport to a Brain; Send connects once per
// packet.
type Dialer func() (mcp.Transport, error)

// Wire sends packets to a Brain. Its zero value is not usable: Contracts,
// Ledger and Brain are required.
type Wire struct {
	Contracts Validator
	// Ledger records every packet sent and every reply. If an append
	// fails, Send fails and nothing further happens.
	Ledger custody.Ledger
	// Room receives the brain_packet_rejected and brain_response_rejected
	// memory events; nil logs none.
	Room  *Room
	Brain Dialer
	// AllowTestFixture lets packets with origin test_fixture through.
	AllowTestFixture bool
	// Actor names the sender on the ledger; "brain-client" when empty.
	Actor string
	// Timeout bounds one exchange with the Brain; 60 s when zero.
	Timeout time.Duration
}

// Answer is the outcome of a Send that got as far as the Brain.
type Answer struct {
	Job   string `json:"job"`
	Trace string `json:"trace"`
	// Reason is a soft failure (brain_unreachable, brain_packet_tool_absent,
	// response_schema_invalid, brain_error); "" when the Brain answered.
	Reason     string              `json:"reason,omitempty"`
	Detail     string              `json:"detail,omitempty"`
	Violations []custody.Violation `json:"violations,omitempty"`
	// Response is the validated reply; Raw its exact bytes.
	Response *Response        `json:"response,omitempty"`
	Raw      json.RawMessage  `json:"-"`
	Sent     custody.Receipt  `json:"sent"`
	Reply    *custody.Receipt `json:"reply,omitempty"`
}

// Answered reports whether the Brain gave a valid reply.
func (a Answer) Answered() bool { return a.Reason == "" && a.Response != nil }

// packetHead is what Send reads of a packet before validating it.
type packetHead struct {
	Job           string `json:"job"`
	Origin        string `json:"origin"`
	ActiveContext struct {
		FocusNode struct {
			ID string `json:"id"`
		} `json:"focus_node"`
	} `json:"active_context"`
}

// Send checks packet, in order: its origin is allowed, its job is known,
// and it is valid against the job's in schema. A packet failing any check
// is refused (EDENIED or EINVALID with the violations), never stripped, and
// a brain_packet_rejected memory event is logged. A valid packet is
// recorded on the ledger, then sent to the Brain's brain_packet tool as
// {packet}; the reply is validated against the job's out schema and
// recorded. Soft failures come back as Answer.Reason with a nil error and
// leave the room's graph untouched.
func (w *Wire) Send(ctx context.Context, packet json.RawMessage) (Answer, error) {
	head, err := w.admit(ctx, packet)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Job: head.Job, Trace: newTrace()}
	refs := map[string]string{"job": head.Job, "packet_sha256": sha256Hex(packet)}
	sent, err := w.append(ctx, kindPacketSent, a.Trace, refs, packet)
	if err != nil {
		return Answer{}, err
	}
	a.Sent = sent
	raw, reason, detail := w.exchange(ctx, packet)
	if reason != "" {
		a.Reason, a.Detail = reason, detail
		return a, w.softFail(ctx, &a, refs)
	}
	return w.accept(ctx, a, refs, head, raw)
}

// admit runs the three checks that come before anything is sent.
func (w *Wire) admit(ctx context.Context, packet json.RawMessage) (packetHead, error) {
	var head packetHead
	if err := json.Unmarshal(packet, &head); err != nil {
		return head, w.refuse(ctx, head, packet, custody.Errorf(custody.EINVALID, "packet is not a JSON object"))
	}
	if head.Origin != originNavigation && !(w.AllowTestFixture && head.Origin == originTestFixture) {
		return head, w.refuse(ctx, head, packet, custody.Errorf(custody.EDENIED, "packet origin %q is not allowed", head.Origin))
	}
	if !knownJob(head.Job) {
		return head, w.refuse(ctx, head, packet, custody.Errorf(custody.EINVALID, "unknown job %q", head.Job))
	}
	if err := w.Contracts.Validate(InRef(head.Job), packet); err != nil {
		if custody.ErrorKind(err) != custody.EINVALID {
			return head, fmt.Errorf("validate %s packet: %w", head.Job, err)
		}
		e := custody.AsError(err)
		refusal := &custody.Error{Kind: custody.EINVALID, Message: "packet refused: not valid against " + InRef(head.Job),
			Violations: e.Violations}
		return head, w.refuse(ctx, head, packet, refusal)
	}
	return head, nil
}

// refuse logs a refusal in the room and on the ledger and returns it. The
// packet itself is not copied: a refused packet may carry what must not
// leave, so only its hash and the violation locations are kept.
func (w *Wire) refuse(ctx context.Context, head packetHead, packet []byte, refusal *custody.Error) error {
	record := map[string]any{"job": head.Job, "origin": head.Origin, "kind": refusal.Kind,
		"reason": refusal.Message, "packet_sha256": sha256Hex(packet), "violations": locations(refusal.Violations)}
	if w.Room != nil {
		if _, err := w.Room.Record(ctx, eventPacketRejected, focusRef(head), record); err != nil {
			return fmt.Errorf("log refused packet: %w", err)
		}
	}
	body, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("encode refusal: %w", err)
	}
	rcpt, err := w.append(ctx, kindPacketRefused, newTrace(), map[string]string{"packet_sha256": sha256Hex(packet)}, body)
	if err != nil {
		return err
	}
	refusal.Receipt = &rcpt
	return refusal
}

// focusRef returns the packet's focus id when it is a well-formed id.
func focusRef(h packetHead) string {
	if idPattern.MatchString(h.ActiveContext.FocusNode.ID) {
		return h.ActiveContext.FocusNode.ID
	}
	return ""
}

// locations keeps where and which keyword a violation failed, not its
// message, which may quote the refused value.
func locations(vs []custody.Violation) []custody.Violation {
	out := make([]custody.Violation, len(vs))
	for i, v := range vs {
		out[i] = custody.Violation{Instance: v.Instance, Keyword: v.Keyword}
	}
	return out
}

// exchange calls the Brain and returns its reply bytes, or a soft failure
// reason and detail.
func (w *Wire) exchange(ctx context.Context, packet json.RawMessage) (raw []byte, reason, detail string) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(w.Timeout, 60*time.Second))
	defer cancel()
	if w.Brain == nil {
		return nil, ReasonUnreachable, "no Brain configured"
	}
	t, err := w.Brain()
	if err != nil {
		return nil, ReasonUnreachable, err.Error()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "custody-brain-client", Version: packetVersion}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, ReasonUnreachable, err.Error()
	}
	defer cs.Close()
	if ok, err := hasTool(ctx, cs); err != nil {
		return nil, ReasonUnreachable, err.Error()
	} else if !ok {
		return nil, ReasonToolAbsent, "the Brain exposes no " + toolName + " tool"
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolName,
		Arguments: map[string]json.RawMessage{"packet": packet}})
	if err != nil {
		return nil, ReasonUnreachable, err.Error()
	}
	return replyBytes(res)
}

func hasTool(ctx context.Context, cs *mcp.ClientSession) (bool, error) {
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return false, fmt.Errorf("list tools: %w", err)
		}
		if tool.Name == toolName {
			return true, nil
		}
	}
	return false, nil
}

// replyBytes returns the exact JSON text of a tool result: its first text
// content, else its structured content.
func replyBytes(res *mcp.CallToolResult) ([]byte, string, string) {
	text := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = t.Text
			break
		}
	}
	if res.IsError {
		return nil, ReasonBrainError, clip(text, 500)
	}
	if text != "" {
		return []byte(text), "", ""
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			return b, "", ""
		}
	}
	return []byte{}, "", ""
}

// accept validates the reply against the job's out schema and records it.
func (w *Wire) accept(ctx context.Context, a Answer, refs map[string]string, head packetHead, raw []byte) (Answer, error) {
	resp, violations, err := w.checkReply(head.Job, raw)
	if err != nil {
		return a, err
	}
	if violations != nil {
		a.Reason, a.Detail, a.Violations = ReasonResponseSchema, "the reply is not a valid "+head.Job+" response", violations
		return a, w.rejectReply(ctx, &a, refs, head, raw)
	}
	refs["reply_sha256"] = sha256Hex(raw)
	rcpt, err := w.append(ctx, kindReplyReceived, a.Trace, refs, raw)
	if err != nil {
		return a, err
	}
	a.Reply, a.Response, a.Raw = &rcpt, &resp, raw
	return a, nil
}

// checkReply validates raw against the out schema and decodes it. A
// reply for another job is invalid too.
func (w *Wire) checkReply(job string, raw []byte) (Response, []custody.Violation, error) {
	if err := w.Contracts.Validate(outRef(job), raw); err != nil {
		if custody.ErrorKind(err) != custody.EINVALID {
			return Response{}, nil, fmt.Errorf("validate %s reply: %w", job, err)
		}
		vs := custody.AsError(err).Violations
		if vs == nil {
			vs = []custody.Violation{{Message: custody.ErrorMessage(err)}}
		}
		return Response{}, vs, nil
	}
	var resp Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return Response{}, []custody.Violation{{Message: "reply does not decode"}}, nil
	}
	if resp.JobID != "" && resp.JobID != job {
		return Response{}, []custody.Violation{{Instance: "/job_id", Keyword: "const",
			Message: fmt.Sprintf("reply is for job %q, not %q", resp.JobID, job)}}, nil
	}
	return resp, nil, nil
}

// rejectReply logs brain_response_rejected and records the reply, as a
// string, on the ledger.
func (w *Wire) rejectReply(ctx context.Context, a *Answer, refs map[string]string, head packetHead, raw []byte) error {
	if w.Room != nil {
		_, err := w.Room.Record(ctx, eventResponseRejected, focusRef(head),
			map[string]any{"job": head.Job, "reason": a.Reason, "reply_sha256": sha256Hex(raw), "violations": locations(a.Violations)})
		if err != nil {
			return fmt.Errorf("log rejected reply: %w", err)
		}
	}
	body, err := json.Marshal(map[string]any{"reason": a.Reason, "violations": a.Violations, "reply": string(raw)})
	if err != nil {
		return fmt.Errorf("encode rejected reply: %w", err)
	}
	rcpt, err := w.append(ctx, kindReplyRejected, a.Trace, refs, body)
	a.Reply = &rcpt
	return err
}

// softFail records a failed exchange on the ledger.
func (w *Wire) softFail(ctx context.Context, a *Answer, refs map[string]string) error {
	body, err := json.Marshal(map[string]string{"reason": a.Reason, "detail": a.Detail})
	if err != nil {
		return fmt.Errorf("encode soft failure: %w", err)
	}
	_, err = w.append(ctx, kindBrainSoftFail, a.Trace, refs, body)
	return err
}

func (w *Wire) append(ctx context.Context, kind, trace string, refs map[string]string, body []byte) (custody.Receipt, error) {
	if w.Ledger == nil {
		return custody.Receipt{}, custody.Errorf(custody.EUNAVAILABLE, "no evidence ledger: nothing is sent without one")
	}
	e, err := w.Ledger.Append(ctx, custody.Entry{Kind: kind, Trace: trace, Actor: cmp.Or(w.Actor, "brain-client"),
		Refs: refs, Body: body})
	if err != nil {
		return custody.Receipt{}, fmt.Errorf("record %s: %w", kind, err)
	}
	return custody.Receipt{Seq: e.Seq, Hash: e.Hash}, nil
}

func newTrace() string {
	var b [8]byte
	rand.Read(b[:])
	return "brain-" + hex.EncodeToString(b[:])
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
