package approval_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

func TestWebhook(t *testing.T) {
	a := custody.Approval{
		ID: "0b6f6c0e-8f4e-4b0c-9d53-5b1b7f3f2a11", Tool: "post_announcement", Arguments: postArgs,
		Reason: "post it", ExpiresAt: time.Date(2026, 3, 1, 9, 5, 0, 0, time.UTC),
	}
	tests := []struct {
		name   string
		status int
		ok     bool
	}{
		{"OK", http.StatusOK, true},
		{"OKAccepted", http.StatusAccepted, true},
		{"ErrServerError", http.StatusInternalServerError, false},
		{"ErrNotFound", http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]json.RawMessage
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("got %s with content type %q", r.Method, r.Header.Get("Content-Type"))
				}
				body, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(body, &got); err != nil {
					t.Errorf("payload is not JSON: %v", err)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, `{"queued":true}`)
			}))
			defer srv.Close()
			w := &approval.Webhook{Channel: "pager", URL: srv.URL + "/notify?token=secret", ConsoleURL: "https://custody.example", Client: srv.Client()}
			err := w.Notify(context.Background(), a)
			if (err == nil) != tt.ok {
				t.Fatalf("Notify = %v, want ok %v", err, tt.ok)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the URL: %v", err)
			}
			want := map[string]string{
				"approval_request_id": `"` + a.ID + `"`,
				"tool":                `"post_announcement"`,
				"arguments":           string(postArgs),
				"reason":              `"post it"`,
				"expires_at":          `"2026-03-01T09:05:00.000000Z"`,
				"console_url":         `"https://custody.example/#/approvals/` + a.ID + `"`,
			}
			for k, v := range want {
				if string(got[k]) != v {
					t.Errorf("payload %s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

func TestWebhookUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	w := &approval.Webhook{URL: url + "/?key=secret"}
	err := w.Notify(context.Background(), custody.Approval{ID: "x"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Notify = %v, want an error without the URL", err)
	}
	if w.Name() != "webhook" {
		t.Errorf("default name = %q", w.Name())
	}
}

func TestWebhookAsEscalationChannel(t *testing.T) {
	hits := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p approval.WebhookPayload
		_ = json.NewDecoder(r.Body).Decode(&p)
		hits <- p.ID
	}))
	defer srv.Close()
	f := newFixture(t, &approval.Webhook{Channel: "pager", URL: srv.URL, Client: srv.Client()})
	a := f.request(t, approval.Request{})
	f.clk.Add(approval.DefaultTTL / 2)
	if n, err := f.svc.ExpireDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	select {
	case id := <-hits:
		if id != a.ID {
			t.Fatalf("pager got %q, want %q", id, a.ID)
		}
	default:
		t.Fatal("the pager was not called on escalation")
	}
}
