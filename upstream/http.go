package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// maxReply caps the reply custody reads from an HTTP tool.
const maxReply = 4 << 20

// HTTPTool is a tool that is a plain HTTP endpoint: custody sends the
// exact argument bytes as a JSON body (POST unless Method says otherwise)
// and takes a JSON reply as the tool's output.
type HTTPTool struct {
	Name        string
	URL         string
	Method      string
	Headers     map[string]string
	Input       json.RawMessage
	Output      json.RawMessage
	Description string
}

// handler calls the endpoint. A reply that is not 2xx, not JSON or larger
// than maxReply makes the call unavailable; the detail goes to the log and
// the ledger, never to the agent.
func (h HTTPTool) handler(client *http.Client) gate.Handler {
	method := cmpOr(h.Method, http.MethodPost)
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		req, err := http.NewRequestWithContext(ctx, method, h.URL, bytes.NewReader(c.Args))
		if err != nil {
			return nil, fmt.Errorf("http tool %s: %w", h.Name, err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		for k, v := range h.Headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("http tool %s: %w", h.Name, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
		switch {
		case err != nil:
			return nil, fmt.Errorf("http tool %s: read reply: %w", h.Name, err)
		case len(body) > maxReply:
			return nil, fmt.Errorf("http tool %s: reply larger than %d bytes", h.Name, maxReply)
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			return nil, fmt.Errorf("http tool %s: %s: %.200s", h.Name, resp.Status, body)
		case !json.Valid(body):
			return nil, fmt.Errorf("http tool %s: the reply is not JSON: %.200s", h.Name, body)
		}
		return body, nil
	}
}
