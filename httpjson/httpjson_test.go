package httpjson

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestWriteError(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		body   string
	}{
		{custody.Errorf(custody.EINVALID, "bad"), 400, `{"error":{"kind":"invalid","message":"bad"}}`},
		{custody.Errorf(custody.EPENDING, "wait"), 202, `"kind":"pending_approval"`},
		{errors.New("disk on fire at /var/secret"), 500, `{"error":{"kind":"internal","message":"internal error"}}`},
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, tt.err)
		if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) || strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%v: %d %s", tt.err, rec.Code, rec.Body.String())
		}
		if rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", rec.Header().Get("Content-Type"))
		}
	}
}
