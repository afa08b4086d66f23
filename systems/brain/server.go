package brain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/custody-dev/custody"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Answerer computes a job's BrainResponse from a packet that is already
// valid against the job's in schema.
type Answerer interface {
	Answer(ctx context.Context, job string, packet json.RawMessage) (json.RawMessage, error)
}

// ServerOptions configures NewServer.
type ServerOptions struct {
	// Contracts validates packets and replies; required.
	Contracts Validator
	// Answerer answers valid packets; deterministic when nil.
	Answerer Answerer
	// Logger receives what a caller is not told; slog.Default when nil.
	Logger *slog.Logger
}

// toolInputSchema is what the brain_packet tool advertises. The handler
// validates the packet itself against the job's in schema, on the exact
// bytes received.
const toolInputSchema = `{"type":"object","required":["packet"],"additionalProperties":false,
"properties":{"packet":{"type":"object","description":"A Brain Context Packet v1.0, valid against the in schema of its job."}}}`

// NewServer returns an MCP server exposing the brain_packet tool. The tool
// refuses a packet that is not valid against its job's in schema, answers
// a valid one with the Answerer, and never lets out a reply that is not
// valid against the job's out schema.
func NewServer(o ServerOptions) *mcp.Server {
	if o.Answerer == nil {
		o.Answerer = deterministic{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "custody-brain", Version: packetVersion}, nil)
	s.AddTool(&mcp.Tool{
		Name:        toolName,
		Description: "Answer one of the twelve Brain jobs from a Brain Context Packet. Advisory only.",
		InputSchema: json.RawMessage(toolInputSchema),
	}, handler{o}.call)
	return s
}

type handler struct{ o ServerOptions }

func (h handler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	packet, job, err := h.packet(req.Params.Arguments)
	if err != nil {
		return toolError(err), nil
	}
	reply, err := h.o.Answerer.Answer(ctx, job, packet)
	if err != nil {
		h.o.Logger.Error("brain answer failed", "job", job, "err", err)
		return toolError(custody.Errorf(custody.EUNAVAILABLE, "the Brain could not answer %s", job)), nil
	}
	if err := h.o.Contracts.Validate(outRef(job), reply); err != nil {
		h.o.Logger.Error("brain reply failed its contract", "job", job, "err", err)
		return toolError(custody.Errorf(custody.EINTERNAL, "the Brain's %s reply failed its contract and was withheld", job)), nil
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(reply)}},
		StructuredContent: json.RawMessage(reply),
	}, nil
}

// packet takes the packet out of the raw arguments, which must be exactly
// {"packet": {...}}, and validates it against its job's in schema.
func (h handler) packet(args json.RawMessage) (json.RawMessage, string, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(args, &in); err != nil || in == nil {
		return nil, "", custody.Errorf(custody.EINVALID, "arguments must be an object {packet}")
	}
	packet, ok := in["packet"]
	if !ok || len(in) != 1 {
		return nil, "", custody.Errorf(custody.EINVALID, "arguments must hold exactly one field, packet")
	}
	var head packetHead
	if err := json.Unmarshal(packet, &head); err != nil {
		return nil, "", custody.Errorf(custody.EINVALID, "packet must be an object")
	}
	if !knownJob(head.Job) {
		return nil, "", custody.Errorf(custody.EINVALID, "unknown job %q", head.Job)
	}
	if err := h.o.Contracts.Validate(InRef(head.Job), packet); err != nil {
		return nil, "", err
	}
	return bytes.Clone(packet), head.Job, nil
}

// toolError is the one mapping of an error to an MCP tool error: the kind,
// the safe message and the violations, as JSON text.
func toolError(err error) *mcp.CallToolResult {
	e := custody.AsError(err)
	body, merr := json.Marshal(map[string]any{"error": e.Kind, "message": e.Message, "violations": e.Violations})
	if merr != nil {
		body = []byte(fmt.Sprintf(`{"error":%q}`, custody.EINTERNAL))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}
