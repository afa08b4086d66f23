package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/custody-dev/custody"
)

// maxReply bounds the bytes read from a model server's reply.
const maxReply = 8 << 20

// postJSON posts body as JSON to url and decodes the reply into out.
// Transport failures and error statuses are EUNAVAILABLE; a reply that is
// not the expected JSON is EINVALID.
func postJSON(ctx context.Context, client *http.Client, url, apiKey string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return &custody.Error{Kind: custody.EINTERNAL, Message: "encode chat request", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return custody.Errorf(custody.EINVALID, "chat request to %s: %v", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "model server unreachable: POST " + url, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "read model reply from " + url, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return &custody.Error{Kind: custody.EUNAVAILABLE,
			Message: fmt.Sprintf("model server: POST %s: %s", url, resp.Status),
			Err:     fmt.Errorf("body: %.300s", data)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "model reply from " + url + " is not the expected JSON", Err: err}
	}
	return nil
}
