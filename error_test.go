package custody_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

func TestDetailOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		err  error
		want custody.ErrorDetail
	}{
		{"Pending", fmt.Errorf("call: %w", &custody.Error{Kind: custody.EPENDING, Message: "wait", ApprovalRequestID: "a1", ExpiresAt: at}),
			custody.ErrorDetail{Kind: custody.EPENDING, Message: "wait", ApprovalRequestID: "a1", ExpiresAt: "2026-01-02T03:04:05.000000Z"}},
		{"Invalid", &custody.Error{Kind: custody.EINVALID, Message: "bad", Violations: []custody.Violation{{Instance: "/x"}}},
			custody.ErrorDetail{Kind: custody.EINVALID, Message: "bad", Violations: []custody.Violation{{Instance: "/x"}}}},
		{"PlainErrorIsInternal", errors.New("disk on fire at /var/secret"),
			custody.ErrorDetail{Kind: custody.EINTERNAL, Message: "internal error"}},
		{"InternalDropsViolations", &custody.Error{Kind: custody.EINTERNAL, Message: "output breach", Violations: []custody.Violation{{Instance: "/secret"}}},
			custody.ErrorDetail{Kind: custody.EINTERNAL, Message: "output breach"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := custody.DetailOf(tt.err)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("DetailOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
