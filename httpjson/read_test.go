package httpjson

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestRead(t *testing.T) {
	type form struct {
		ID   string `json:"id"`
		Note string `json:"note"`
	}
	for _, tt := range []struct{ name, body, want string }{
		{"Duplicate", `{"id":"a","id":"b"}`, "duplicate"},
		{"UTF8", "{\"id\":\"a\xff\"}", "UTF-8"},
		{"Trailing", `{"id":"a"} {"id":"b"}`, "unexpected data"},
		{"Unknown", `{"id":"a","operator":"mallory"}`, "unknown member"},
		{"CaseFolded", `{"id":"a","ID":"b"}`, "unknown member \"ID\""},
		{"CaseOnly", `{"Id":"a"}`, "unknown member"},
		{"TooLarge", `{"id":"` + strings.Repeat("a", 100) + `"}`, "larger than 64 bytes"},
		{"NotJSON", `id=a`, "not strict JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f form
			err := Read(httptest.NewRequest("POST", "/", strings.NewReader(tt.body)), 64, &f)
			if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read(%q) = %v, want invalid saying %q", tt.body, err, tt.want)
			}
		})
	}
	var f form
	if err := Read(httptest.NewRequest("POST", "/", strings.NewReader(`{"id":"a","note":"é"}`)), 64, &f); err != nil || f.ID != "a" || f.Note != "é" {
		t.Fatalf("a strict body: %+v, %v", f, err)
	}
}
