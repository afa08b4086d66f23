package httpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// TestStatus pins the one table: every kind maps to its status, and what
// is not a kind is internal.
func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		kind string
		want int
	}{
		{custody.EINVALID, http.StatusBadRequest},
		{custody.EDENIED, http.StatusForbidden},
		{custody.EPENDING, http.StatusAccepted},
		{custody.EEXPIRED, http.StatusConflict},
		{custody.ECONFLICT, http.StatusConflict},
		{custody.ENOTFOUND, http.StatusNotFound},
		{custody.EUNAVAILABLE, http.StatusServiceUnavailable},
		{custody.EUNAUTHORIZED, http.StatusUnauthorized},
		{custody.EINTERNAL, http.StatusInternalServerError},
		{"", http.StatusInternalServerError},
		{"INVALID", http.StatusInternalServerError},
		{"no_such_kind", http.StatusInternalServerError},
	} {
		t.Run("Kind"+tt.kind, func(t *testing.T) {
			if got := Status(tt.kind); got != tt.want {
				t.Errorf("Status(%q) = %d, want %d", tt.kind, got, tt.want)
			}
		})
	}
}

func TestStatusFor(t *testing.T) {
	own := WithStatus(http.StatusMethodNotAllowed, "use %s", "POST")
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"OKOwnStatus", own, http.StatusMethodNotAllowed},
		{"OKOwnStatusWrapped", fmt.Errorf("serve: %w", own), http.StatusMethodNotAllowed},
		{"OKKind", custody.Errorf(custody.ENOTFOUND, "no such call"), http.StatusNotFound},
		{"OKKindWrapped", fmt.Errorf("lookup: %w", custody.Errorf(custody.EDENIED, "no")), http.StatusForbidden},
		{"OKTooLarge", TooLarge(10), http.StatusRequestEntityTooLarge},
		{"ErrPlain", errors.New("disk"), http.StatusInternalServerError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := StatusFor(tt.err); got != tt.want {
				t.Errorf("StatusFor(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// TestWithStatus: the error is an EINVALID custody error whatever its
// status, so the body keeps the one shape and errors.As finds it.
func TestWithStatus(t *testing.T) {
	err := WithStatus(http.StatusRequestTimeout, "late by %d s", 3)
	var ce *custody.Error
	if !errors.As(err, &ce) || ce.Kind != custody.EINVALID || ce.Message != "late by 3 s" {
		t.Fatalf("WithStatus = %#v, want EINVALID \"late by 3 s\"", err)
	}
	if err.Error() != ce.Error() {
		t.Errorf("Error() = %q, want the custody error's %q", err.Error(), ce.Error())
	}
	if got := TooLarge(64).Error(); !strings.Contains(got, "larger than 64 bytes") {
		t.Errorf("TooLarge(64) = %q", got)
	}
}

func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		v      any
		code   int
		body   string
	}{
		{"OKObject", http.StatusCreated, map[string]int{"n": 1}, http.StatusCreated, "{\"n\":1}\n"},
		{"OKNull", http.StatusOK, nil, http.StatusOK, "null\n"},
		{"OKString", http.StatusOK, "<b>", http.StatusOK, "\"\\u003cb\\u003e\"\n"},
		{"ErrChannel", http.StatusOK, make(chan int), http.StatusInternalServerError, "{\"error\":{\"kind\":\"internal\",\"message\":\"internal error\"}}\n"},
		{"ErrNaN", http.StatusAccepted, math.NaN(), http.StatusInternalServerError, "{\"error\":{\"kind\":\"internal\",\"message\":\"internal error\"}}\n"},
		{"ErrMarshaler", http.StatusOK, badMarshaler{}, http.StatusInternalServerError, "{\"error\":{\"kind\":\"internal\",\"message\":\"internal error\"}}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Write(rec, tt.status, tt.v)
			if rec.Code != tt.code || rec.Body.String() != tt.body {
				t.Errorf("Write = %d %q, want %d %q", rec.Code, rec.Body.String(), tt.code, tt.body)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q", got)
			}
		})
	}
}

// badMarshaler fails to marshal, with a message that must not leave.
type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("secret detail") }

func TestWriteErrorBody(t *testing.T) {
	expires := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	vs := []custody.Violation{{Instance: "/a", Keyword: "type", Message: "want string"}}
	for _, tt := range []struct {
		name   string
		err    error
		status int
		want   custody.ErrorDetail
	}{
		{"OKViolations", &custody.Error{Kind: custody.EINVALID, Message: "bad", Violations: vs}, 400,
			custody.ErrorDetail{Kind: "invalid", Message: "bad", Violations: vs}},
		{"OKPending", &custody.Error{Kind: custody.EPENDING, Message: "held", ApprovalRequestID: "apr_1", ExpiresAt: expires}, 202,
			custody.ErrorDetail{Kind: "pending_approval", Message: "held", ApprovalRequestID: "apr_1", ExpiresAt: custody.FormatTime(expires)}},
		{"OKOwnStatus", WithStatus(http.StatusUnsupportedMediaType, "want json"), 415,
			custody.ErrorDetail{Kind: "invalid", Message: "want json"}},
		{"ErrInternalViolationsWithheld", &custody.Error{Kind: custody.EINTERNAL, Message: "output withheld", Violations: vs}, 500,
			custody.ErrorDetail{Kind: "internal", Message: "output withheld"}},
		{"ErrInternalNoMessage", &custody.Error{Kind: custody.EINTERNAL, Err: errors.New("secret")}, 500,
			custody.ErrorDetail{Kind: "internal", Message: "internal error"}},
		{"ErrPlain", fmt.Errorf("open /var/secret: %w", errors.New("denied")), 500,
			custody.ErrorDetail{Kind: "internal", Message: "internal error"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tt.err)
			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d", rec.Code, tt.status)
			}
			if strings.Contains(rec.Body.String(), "secret") {
				t.Errorf("body leaks the internal error: %s", rec.Body)
			}
			var got ErrorBody
			dec := json.NewDecoder(rec.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			g, w := fmt.Sprintf("%+v", got.Error), fmt.Sprintf("%+v", tt.want)
			if g != w {
				t.Errorf("body error = %s, want %s", g, w)
			}
		})
	}
}
