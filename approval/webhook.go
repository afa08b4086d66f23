package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
)

// Webhook is a Notifier that POSTs an approval to a pager or SMS gateway
// as JSON:
//
//	{"approval_request_id", "tool", "arguments", "reason", "expires_at", "console_url"}
//
// Any status outside 2xx is a failed notification.
//
// With a Key, every message is signed as Standard Webhooks specifies
// (https://www.standardwebhooks.com): a webhook-id unique to the message,
// a webhook-timestamp in unix seconds and a webhook-signature
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>", so that the receiver
// can refuse a forged, altered or replayed page (see VerifyWebhook).
type Webhook struct {
	// Channel is the channel name (Name returns it); "webhook" when empty.
	Channel string
	// URL receives the POST.
	URL string
	// ConsoleURL is the base URL of the operator console; the payload's
	// console_url points at the request there. Empty leaves it out.
	ConsoleURL string
	// Client sends the request; a client with a 10 s timeout when nil.
	Client *http.Client
	// Key signs every message (see ParseWebhookSecret); nil sends them
	// unsigned.
	Key []byte
	// Now is the clock of the signature's timestamp; time.Now when nil.
	Now func() time.Time
}

var _ Notifier = (*Webhook)(nil)

// WebhookPayload is the JSON a Webhook sends.
type WebhookPayload struct {
	ID         string          `json:"approval_request_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Reason     string          `json:"reason"`
	ExpiresAt  string          `json:"expires_at"`
	ConsoleURL string          `json:"console_url,omitempty"`
}

// Name returns the channel the webhook serves.
func (w *Webhook) Name() string {
	if w.Channel == "" {
		return "webhook"
	}
	return w.Channel
}

// Notify POSTs a to the webhook URL. The error never holds the URL, which
// may carry a secret.
func (w *Webhook) Notify(ctx context.Context, a custody.Approval) error {
	body, err := json.Marshal(w.payload(a))
	if err != nil {
		return fmt.Errorf("%s: encode payload: %w", w.Name(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: bad webhook URL", w.Name())
	}
	req.Header.Set("Content-Type", "application/json")
	w.sign(req, "msg_"+uuid.NewString(), body)
	resp, err := w.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: post: %w", w.Name(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: gateway answered %s", w.Name(), resp.Status)
	}
	return nil
}

// payload builds the JSON body for a.
func (w *Webhook) payload(a custody.Approval) WebhookPayload {
	p := WebhookPayload{ID: a.ID, Tool: a.Tool, Arguments: a.Arguments, Reason: a.Reason, ExpiresAt: custody.FormatTime(a.ExpiresAt)}
	if w.ConsoleURL != "" {
		p.ConsoleURL = w.ConsoleURL + "/#/approvals/" + url.PathEscape(a.ID)
	}
	return p
}

func (w *Webhook) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Webhook) client() *http.Client {
	if w.Client != nil {
		return w.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}
