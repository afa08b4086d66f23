package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
)

const pagerSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestConfiguredWebhookSigned: a webhook whose config carries a secret
// (from the environment) sends pages a receiver holding the secret
// verifies; one holding another secret refuses them.
func TestConfiguredWebhookSigned(t *testing.T) {
	key, err := approval.ParseWebhookSecret(pagerSecret)
	if err != nil {
		t.Fatal(err)
	}
	other := make([]byte, len(key))
	for _, tc := range []struct {
		name string
		key  []byte
		ok   bool
	}{{"SameSecret", key, true}, {"ErrOtherSecret", other, false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := approval.VerifyWebhook(tc.key, r.Header, body, time.Now(), 0); err != nil {
					http.Error(w, err.Error(), http.StatusUnauthorized)
				}
			}))
			defer srv.Close()
			env := map[string]string{"PAGER_SECRET": pagerSecret}
			cfg, err := config.Parse([]byte(`{"webhooks":[{"name":"pager","url":"`+srv.URL+`","secret":"${env:PAGER_SECRET}"}]}`), func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			m := (&Main{Stderr: io.Discard, Getenv: func(string) string { return "" }}).withFileEnv(cfg, "http://127.0.0.1:8080")
			ns, err := m.notifiers()
			if err != nil || len(ns) != 1 {
				t.Fatalf("notifiers: %v, %v", ns, err)
			}
			err = ns[0].Notify(context.Background(), custody.Approval{ID: "a-1", Tool: "t", ExpiresAt: time.Now()})
			if (err == nil) != tc.ok {
				t.Fatalf("page: %v, want accepted %v", err, tc.ok)
			}
		})
	}
}

func TestNotifySecretsErrors(t *testing.T) {
	for _, tc := range []struct{ notify, secrets, want string }{
		{"pager=http://h/x", "sms=" + pagerSecret, "no webhooks"},
		{"pager=http://h/x", "pager=hunter2", "webhook pager"},
		{"pager=http://h/x", "garbage", "want"},
	} {
		env := map[string]string{"CUSTODY_NOTIFY": tc.notify, "CUSTODY_NOTIFY_SECRETS": tc.secrets}
		m := &Main{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
		_, err := m.notifiers()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want an error containing %q that repeats no secret", tc.secrets, err, tc.want)
		}
	}
	var stderr strings.Builder
	env := map[string]string{"CUSTODY_NOTIFY": "pager=http://h/x"}
	m := &Main{Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	if _, err := m.notifiers(); err != nil || !strings.Contains(stderr.String(), "unsigned") {
		t.Errorf("a webhook without a secret: %v, stderr %q; want a warning", err, stderr.String())
	}
}

func TestEscalateAtFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"escalateAt":0.8}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	m := (&Main{Stderr: io.Discard, Getenv: func(string) string { return "" }}).withFileEnv(cfg, "http://127.0.0.1:8080")
	if f, err := m.escalateAt(); err != nil || f != 0.8 {
		t.Fatalf("escalateAt = %v, %v; want 0.8", f, err)
	}
	for _, v := range []string{"1", "0", "half"} {
		bad := &Main{Stderr: io.Discard, Getenv: func(k string) string {
			if k == "CUSTODY_ESCALATE_AT" {
				return v
			}
			return ""
		}}
		if _, err := bad.escalateAt(); err == nil {
			t.Errorf("CUSTODY_ESCALATE_AT=%s accepted", v)
		}
	}
}
