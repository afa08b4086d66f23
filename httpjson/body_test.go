package httpjson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

func TestCheckContentType(t *testing.T) {
	for _, tt := range []struct {
		name, ct string
		ok       bool
	}{
		{"OKPlain", "application/json", true},
		{"OKCharset", "application/json; charset=utf-8", true},
		{"OKCharsetUpper", "application/json; charset=UTF-8", true},
		{"OKNoSpace", "application/json;charset=utf-8", true},
		{"OKQuotedCharset", `application/json; charset="utf-8"`, true},
		{"OKTypeCase", "Application/JSON", true},
		{"ErrEmpty", "", false},
		{"ErrText", "text/plain", false},
		{"ErrForm", "application/x-www-form-urlencoded", false},
		{"ErrSuffix", "application/merge-patch+json", false},
		{"ErrLatin1", "application/json; charset=iso-8859-1", false},
		{"ErrOtherParam", "application/json; charset=utf-8; profile=x", false},
		{"ErrOnlyOtherParam", "application/json; boundary=x", false},
		{"ErrMalformed", "application/json; charset", false},
		{"ErrPrefix", "application/jsonx", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkContentType(tt.ct)
			if (err == nil) != tt.ok {
				t.Fatalf("checkContentType(%q) = %v, want ok %v", tt.ct, err, tt.ok)
			}
			if err != nil && StatusFor(err) != http.StatusUnsupportedMediaType {
				t.Errorf("status %d, want 415", StatusFor(err))
			}
		})
	}
}

// request is a POST of body, declared application/json, with the given
// declared length (-1: unknown, as a chunked body).
func request(body io.Reader, length int64) *http.Request {
	r := httptest.NewRequest("POST", "/", body)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = length
	return r
}

func TestReadBodyLimits(t *testing.T) {
	const max = 16
	for _, tt := range []struct {
		name   string
		req    func() *http.Request
		want   string // the body read; "" when refused
		status int    // the refusal's status
		close  bool   // whether the connection is to close
	}{
		{"OKAtCap", func() *http.Request { return request(strings.NewReader(`"`+strings.Repeat("a", max-2)+`"`), max) }, `"aaaaaaaaaaaaaa"`, 0, false},
		{"OKUnknownLengthAtCap", func() *http.Request { return request(strings.NewReader(strings.Repeat("1", max)), -1) }, strings.Repeat("1", max), 0, false},
		{"OKEmpty", func() *http.Request { return request(strings.NewReader(""), 0) }, "", 0, false},
		{"ErrDeclaredOverCap", func() *http.Request { return request(strings.NewReader("1"), max+1) }, "", 413, true},
		{"ErrUnknownLengthOverCap", func() *http.Request { return request(strings.NewReader(strings.Repeat("1", max+1)), -1) }, "", 413, true},
		{"ErrShortOfDeclared", func() *http.Request { return request(strings.NewReader("12"), 5) }, "", 400, true},
		{"ErrBrokenBody", func() *http.Request { return request(iotest.ErrReader(errors.New("reset")), -1) }, "", 400, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			data, err := ReadBody(rec, tt.req(), Limits{MaxBytes: max})
			if tt.status == 0 {
				if err != nil || string(data) != tt.want {
					t.Fatalf("ReadBody = %q, %v; want %q", data, err, tt.want)
				}
			} else if got := StatusFor(err); err == nil || got != tt.status || custody.ErrorKind(err) != custody.EINVALID {
				t.Fatalf("ReadBody = %q, %v (status %d); want a refusal with %d", data, err, got, tt.status)
			}
			if got := rec.Header().Get("Connection") == "close"; got != tt.close {
				t.Errorf("Connection: close = %v, want %v", got, tt.close)
			}
		})
	}
}

// TestReadBodyReadsNoFurtherThanCap: a body of unknown length over the cap
// is read no further than the cap, whatever follows.
func TestReadBodyReadsNoFurtherThanCap(t *testing.T) {
	counted := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	_, err := ReadBody(httptest.NewRecorder(), request(counted, -1), Limits{MaxBytes: 100})
	if StatusFor(err) != http.StatusRequestEntityTooLarge || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Fatalf("ReadBody = %v, want 413 naming the cap", err)
	}
	if counted.n > 100+1 { // one byte past the cap tells it is over
		t.Errorf("read %d bytes of a body capped at 100", counted.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadBodyDefaults(t *testing.T) {
	_, err := ReadBody(httptest.NewRecorder(), request(strings.NewReader("1"), DefaultMaxBody+1), Limits{})
	if want := fmt.Sprintf("larger than %d bytes", DefaultMaxBody); StatusFor(err) != 413 || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadBody over the default cap = %v, want 413 saying %q", err, want)
	}
	data, err := ReadBody(httptest.NewRecorder(), request(bytes.NewReader(make([]byte, DefaultMaxBody)), DefaultMaxBody), Limits{})
	if err != nil || len(data) != DefaultMaxBody {
		t.Errorf("ReadBody at the default cap = %d bytes, %v", len(data), err)
	}
}

func TestReadBodyContentTypeFirst(t *testing.T) {
	r := request(strings.NewReader("1"), 1<<30)
	r.Header.Set("Content-Type", "text/plain")
	if _, err := ReadBody(httptest.NewRecorder(), r, Limits{}); StatusFor(err) != http.StatusUnsupportedMediaType {
		t.Errorf("ReadBody = %v, want 415 before the size is judged", err)
	}
}

// TestReadBodyTimeout: a client that declares a body and never sends it
// is answered 408 once the body's deadline passes, on a real connection.
// The deadline is already past when the read starts, and no byte ever
// comes, so the outcome does not depend on the machine's speed.
func TestReadBodyTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := ReadBody(w, r, Limits{Timeout: time.Nanosecond}); err != nil {
			WriteError(w, err)
			return
		}
		Write(w, http.StatusOK, "read")
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Not a measure of speed: it ends the test, failed, should the server
	// wait for the body instead of answering.
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "did not arrive within 1ns") {
		t.Errorf("answer %d %s, want 408", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Error("the connection is kept open after a body that timed out")
	}
}

func TestReadStrict(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		ok         bool
	}{
		{"OK", `{"a":[1,2,{"b":null}]}`, true},
		{"OKScalar", `"s"`, true},
		{"ErrDuplicate", `{"a":1,"a":2}`, false},
		{"ErrDuplicateNested", `{"a":{"b":1,"b":1}}`, false},
		{"ErrTrailing", `1 2`, false},
		{"ErrEmpty", ``, false},
		{"ErrLoneSurrogate", `"\ud800"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadStrict(httptest.NewRecorder(), post(tt.body), Limits{})
			if tt.ok {
				if err != nil || string(data) != tt.body {
					t.Fatalf("ReadStrict = %q, %v", data, err)
				}
				return
			}
			if data != nil || custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(err.Error(), "not strict JSON") {
				t.Fatalf("ReadStrict = %q, %v; want EINVALID not strict JSON", data, err)
			}
		})
	}
}

func TestNotStrict(t *testing.T) {
	syntax := ledger.Check([]byte(`{"a":1,"a":2}`))
	var se *ledger.SyntaxError
	if !errors.As(syntax, &se) {
		t.Fatalf("ledger.Check = %v, want a *ledger.SyntaxError", syntax)
	}
	if got, want := NotStrict(syntax).Error(), fmt.Sprintf("at byte %d: %s", se.Offset, se.Msg); !strings.Contains(got, want) {
		t.Errorf("NotStrict = %q, want it to say %q", got, want)
	}
	other := NotStrict(errors.New("odd"))
	if custody.ErrorKind(other) != custody.EINVALID || !strings.HasSuffix(other.Error(), "not strict JSON: odd") {
		t.Errorf("NotStrict(other) = %v", other)
	}
}

func TestReadDecodes(t *testing.T) {
	type nested struct {
		N     int      `json:"n"`
		Tags  []string `json:"tags,omitempty"`
		Plain string
	}
	for _, tt := range []struct {
		name, body string
		want       string // "" when refused
	}{
		{"OK", `{"n":2,"tags":["a"],"Plain":"p"}`, `{N:2 Tags:[a] Plain:p}`},
		{"OKUntaggedFieldByName", `{"Plain":"p"}`, `{N:0 Tags:[] Plain:p}`},
		{"ErrUntaggedFieldCase", `{"plain":"p"}`, ""},
		{"ErrType", `{"n":"2"}`, ""},
		{"ErrFraction", `{"n":2.5}`, ""},
		{"ErrNotObject", `[1]`, ""},
		{"ErrTagOption", `{"omitempty":1}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v nested
			err := Read(httptest.NewRecorder(), post(tt.body), Limits{}, &v)
			if tt.want == "" {
				if custody.ErrorKind(err) != custody.EINVALID {
					t.Fatalf("Read(%s) = %+v, %v; want EINVALID", tt.body, v, err)
				}
				return
			}
			if v.Tags == nil {
				v.Tags = []string{}
			}
			if got := fmt.Sprintf("%+v", v); err != nil || got != tt.want {
				t.Fatalf("Read(%s) = %s, %v; want %s", tt.body, got, err, tt.want)
			}
		})
	}
	// A destination that is not a struct is decoded as it is.
	var m map[string]any
	if err := Read(httptest.NewRecorder(), post(`{"Any":1}`), Limits{}, &m); err != nil || m["Any"] == nil {
		t.Errorf("Read into a map = %v, %v", m, err)
	}
}

// TestCheckEnvelopeReplacesValue: the check sees the body with the value
// at the path, and only it, replaced by {}; without a path, or when the
// body passes, check's own answer stands.
func TestCheckEnvelopeReplacesValue(t *testing.T) {
	refuse := errors.New("refused")
	var seen []string
	check := func(b []byte) error {
		seen = append(seen, string(b))
		if bytes.Contains(b, []byte(`"x"`)) {
			return refuse
		}
		return nil
	}
	for _, tt := range []struct {
		name, body string
		path       []string
		err        error
		seen       []string
	}{
		{"OKSpaces", `{"tool" : "a", "arguments" :  {"x" : 1} , "z":2}`, []string{"arguments"}, nil,
			[]string{`{"tool" : "a", "arguments" :  {"x" : 1} , "z":2}`, `{"tool" : "a", "arguments" :  {} , "z":2}`}},
		{"OKNotObject", `{"arguments":["x"]}`, []string{"arguments"}, nil,
			[]string{`{"arguments":["x"]}`, `{"arguments":{}}`}},
		{"OKPasses", `{"arguments":{}}`, []string{"arguments"}, nil, []string{`{"arguments":{}}`}},
		{"ErrNoPath", `{"arguments":{"x":1}}`, nil, refuse, []string{`{"arguments":{"x":1}}`}},
		{"ErrOutside", `{"x":1,"arguments":{"x":1}}`, []string{"arguments"}, refuse,
			[]string{`{"x":1,"arguments":{"x":1}}`, `{"x":1,"arguments":{}}`}},
		{"ErrParentNotObject", `{"params":"x"}`, []string{"params", "arguments"}, refuse, []string{`{"params":"x"}`}},
		{"ErrNotJSON", `{"x"`, []string{"arguments"}, refuse, []string{`{"x"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			if err := CheckEnvelope([]byte(tt.body), check, tt.path...); err != tt.err {
				t.Errorf("CheckEnvelope = %v, want %v", err, tt.err)
			}
			if fmt.Sprint(seen) != fmt.Sprint(tt.seen) {
				t.Errorf("check saw %q, want %q", seen, tt.seen)
			}
		})
	}
}
