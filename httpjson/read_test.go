package httpjson

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// form is what the tests read a body into.
type form struct {
	ID   string `json:"id"`
	Note string `json:"note"`
}

func TestRead(t *testing.T) {
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
			err := Read(httptest.NewRecorder(), post(tt.body), Limits{MaxBytes: 64}, &f)
			if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read(%q) = %v, want invalid saying %q", tt.body, err, tt.want)
			}
		})
	}
	var f form
	if err := Read(httptest.NewRecorder(), post(`{"id":"a","note":"é"}`), Limits{MaxBytes: 64}, &f); err != nil || f.ID != "a" || f.Note != "é" {
		t.Fatalf("a strict body: %+v, %v", f, err)
	}
}

// post is a POST of body declared application/json.
func post(body string) *http.Request {
	r := httptest.NewRequest("POST", "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// TestReadStatuses: the refusals a kind's status would say less of carry
// their own, and WriteError answers with it.
func TestReadStatuses(t *testing.T) {
	var f form
	for _, tt := range []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"NotJSONType", func() *http.Request { r := post(`{"id":"a"}`); r.Header.Set("Content-Type", "text/plain"); return r }, http.StatusUnsupportedMediaType},
		{"Latin1", func() *http.Request {
			r := post(`{"id":"a"}`)
			r.Header.Set("Content-Type", "application/json; charset=latin1")
			return r
		}, http.StatusUnsupportedMediaType},
		{"DeclaredTooLarge", func() *http.Request { r := post(strings.Repeat(" ", 100)); return r }, http.StatusRequestEntityTooLarge},
		{"Duplicate", func() *http.Request { return post(`{"id":"a","id":"b"}`) }, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Read(httptest.NewRecorder(), tt.req(), Limits{MaxBytes: 64}, &f)
			if got := StatusFor(err); got != tt.want {
				t.Fatalf("StatusFor(%v) = %d, want %d", err, got, tt.want)
			}
			w := httptest.NewRecorder()
			WriteError(w, err)
			if w.Code != tt.want || !strings.Contains(w.Body.String(), `"kind":"invalid"`) {
				t.Errorf("WriteError: %d %s", w.Code, w.Body)
			}
		})
	}
}
