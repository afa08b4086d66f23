package approval

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a signed webhook, as Standard Webhooks names them.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// secretPrefix starts a webhook secret in its Standard Webhooks form.
const secretPrefix = "whsec_"

// minSecretBytes is the shortest key a webhook secret may hold: Standard
// Webhooks asks for 24 to 64 bytes.
const minSecretBytes = 24

// DefaultWebhookTolerance is how far a signed webhook's timestamp may be
// from the receiver's clock before VerifyWebhook refuses it as a replay.
const DefaultWebhookTolerance = 5 * time.Minute

// ParseWebhookSecret returns the key of a secret in the Standard Webhooks
// form "whsec_" followed by the base64 of 24 to 64 random bytes.
func ParseWebhookSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, fmt.Errorf("webhook secret: want %q followed by base64", secretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: not base64 after %q: %w", secretPrefix, err)
	}
	if len(key) < minSecretBytes || len(key) > 64 {
		return nil, fmt.Errorf("webhook secret: %d bytes, want 24 to 64", len(key))
	}
	return key, nil
}

// SignWebhook returns the webhook-signature value of a message: "v1,"
// and the base64 HMAC-SHA256 under key of "id.timestamp.body".
func SignWebhook(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook checks a received webhook as a receiver would: a
// webhook-signature among whose space-separated signatures one is the v1
// signature under key of the headers' id and timestamp and the body, and
// a timestamp within tolerance of now (DefaultWebhookTolerance when
// zero), so that a forged, altered or replayed message is refused.
func VerifyWebhook(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	if id == "" || ts == "" || sigs == "" {
		return errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: timestamp %q is not unix seconds", ts)
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: timestamp %s is more than %s from now", ts, tolerance)
	}
	want := []byte(SignWebhook(key, id, sec, body))
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("webhook: no valid signature")
}

// sign sets the Standard Webhooks headers of req, whose body is body,
// when the webhook has a key.
func (w *Webhook) sign(req *http.Request, id string, body []byte) {
	if len(w.Key) == 0 {
		return
	}
	ts := w.now().Unix()
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignWebhook(w.Key, id, ts, body))
}
