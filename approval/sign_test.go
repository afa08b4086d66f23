package approval_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestSignWebhookVector checks the signature against the example of the
// Standard Webhooks specification, so that any conforming receiver
// accepts ours.
func TestSignWebhookVector(t *testing.T) {
	key, err := approval.ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := approval.SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestParseWebhookSecret(t *testing.T) {
	for _, s := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 8))} {
		if _, err := approval.ParseWebhookSecret(s); err == nil {
			t.Errorf("secret %q accepted", s)
		}
	}
}

// receiver is a pager gateway that verifies every message with key and
// answers 401 to one that does not verify.
func receiver(t *testing.T, key []byte, now func() time.Time) (*httptest.Server, *[]string) {
	t.Helper()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := approval.VerifyWebhook(key, r.Header, body, now(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got = append(got, string(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// TestSignedWebhook: a receiver holding the secret accepts our pages and
// refuses one signed with another secret, one whose body was altered,
// one replayed too late and one without a signature.
func TestSignedWebhook(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	clk := newClock()
	a := custody.Approval{ID: "0b6f6c0e-8f4e-4b0c-9d53-5b1b7f3f2a11", Tool: "post_announcement", Arguments: postArgs, ExpiresAt: clk.Now().Add(time.Minute)}
	srv, got := receiver(t, key, clk.Now)
	w := &approval.Webhook{Channel: "pager", URL: srv.URL, Client: srv.Client(), Key: key, Now: clk.Now}
	if err := w.Notify(context.Background(), a); err != nil {
		t.Fatalf("signed page refused: %v", err)
	}
	if len(*got) != 1 || !strings.Contains((*got)[0], a.ID) {
		t.Fatalf("receiver got %q", *got)
	}

	forged := &approval.Webhook{Channel: "pager", URL: srv.URL, Client: srv.Client(), Key: make([]byte, 32), Now: clk.Now}
	if err := forged.Notify(context.Background(), a); err == nil {
		t.Fatal("a page signed with another secret was accepted")
	}
	unsigned := &approval.Webhook{Channel: "pager", URL: srv.URL, Client: srv.Client()}
	if err := unsigned.Notify(context.Background(), a); err == nil {
		t.Fatal("an unsigned page was accepted")
	}

	// Capture a signed message, then alter and replay it.
	var hdr http.Header
	var body []byte
	capture := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			t.Errorf("read the captured body: %v", err)
		}
	}))
	defer capture.Close()
	cw := &approval.Webhook{Channel: "pager", URL: capture.URL, Client: capture.Client(), Key: key, Now: clk.Now}
	if err := cw.Notify(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := approval.VerifyWebhook(key, hdr, body, clk.Now(), 0); err != nil {
		t.Fatalf("captured message: %v", err)
	}
	altered := []byte(strings.Replace(string(body), "DEPLOY", "DELETE", 1))
	if err := approval.VerifyWebhook(key, hdr, altered, clk.Now(), 0); err == nil {
		t.Fatal("an altered body verified")
	}
	other := hdr.Clone()
	other.Set(approval.HeaderWebhookID, "msg_other")
	if err := approval.VerifyWebhook(key, other, body, clk.Now(), 0); err == nil {
		t.Fatal("a message under another id verified")
	}
	if err := approval.VerifyWebhook(key, hdr, body, clk.Now().Add(approval.DefaultWebhookTolerance+time.Second), 0); err == nil {
		t.Fatal("a replay after the tolerance verified")
	}
}
