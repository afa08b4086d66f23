package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/custody-dev/custody"
)

// TestEntryLineRoundTrip checks that every fixture entry comes back from
// its line byte for byte, on one line, with the body carried as "body"
// exactly when it can be.
func TestEntryLineRoundTrip(t *testing.T) {
	for _, e := range fixtureEntries(t) {
		t.Run(e.Kind+"/"+string(e.Body), func(t *testing.T) {
			line := AppendEntryLine(nil, &e)
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\r') >= 0 {
				t.Fatalf("not one line: %q", line)
			}
			if !json.Valid(line) {
				t.Fatalf("not JSON: %s", line)
			}
			inline := !bytes.ContainsAny(e.Body, "\n\r") && !isSpace(e.Body[0]) && !isSpace(e.Body[len(e.Body)-1])
			if got := bytes.Contains(line, []byte(`"body":`)); got != inline {
				t.Errorf("body inline = %v, want %v: %s", got, inline, line)
			}
			l, err := NewDecoder(bytes.NewReader(line)).Next()
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if l.Checkpoint != nil || !reflect.DeepEqual(*l.Entry, e) {
				t.Errorf("decoded\n%+v\nwant\n%+v", l.Entry, e)
			}
			if !bytes.Equal(l.Entry.Body, e.Body) {
				t.Errorf("body = %q, want %q", l.Entry.Body, e.Body)
			}
		})
	}
}

// TestEntryLineOddBodies covers bodies no sealed entry has, which an
// export of a damaged store may still meet: the line must stay one line
// of JSON and carry the bytes, so that verification names the entry.
func TestEntryLineOddBodies(t *testing.T) {
	for _, body := range []string{"", "{", `{"a":1},"kind":"x"`, `{"a":1,"a":2}`, "[1e400]", "1\n2"} {
		t.Run(body, func(t *testing.T) {
			e := custody.Entry{Seq: 1, Refs: map[string]string{}, Body: []byte(body)}
			line := AppendEntryLine(nil, &e)
			if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(line) || !bytes.Contains(line, []byte(`"body_raw":`)) {
				t.Fatalf("line = %s", line)
			}
			l, err := NewDecoder(bytes.NewReader(line)).Next()
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if string(l.Entry.Body) != body {
				t.Errorf("body = %q, want %q", l.Entry.Body, body)
			}
		})
	}
}

func TestCheckpointLineRoundTrip(t *testing.T) {
	cp := SignCheckpoint(testKey(), 99, strings.Repeat("ab", 32), "2026-03-01T12:00:00.000000Z")
	line := AppendCheckpointLine(nil, cp)
	want := `{"checkpoint":{"size":99,"head":"` + cp.Head + `","at":"2026-03-01T12:00:00.000000Z","sig":"` + cp.Sig + "\"}}\n"
	if string(line) != want {
		t.Errorf("line = %s, want %s", line, want)
	}
	l, err := NewDecoder(bytes.NewReader(line)).Next()
	if err != nil {
		t.Fatal(err)
	}
	if l.Entry != nil || *l.Checkpoint != cp {
		t.Errorf("decoded %+v, want %+v", l.Checkpoint, cp)
	}
}

// TestExportRoundTrip decodes a whole export, re-encodes it and compares
// the bytes, then verifies both kinds of body after the round trip.
func TestExportRoundTrip(t *testing.T) {
	export := fixtureExport(t)
	d := NewDecoder(bytes.NewReader(export))
	var again []byte
	v := NewVerifier(testKey().Public().(ed25519.PublicKey))
	for {
		l, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Entry != nil {
			again = AppendEntryLine(again, l.Entry)
			err = v.Entry(l.Entry)
		} else {
			again = AppendCheckpointLine(again, *l.Checkpoint)
			err = v.Checkpoint(*l.Checkpoint)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(again, export) {
		t.Errorf("re-encoded export differs:\n%s\nwant\n%s", again, export)
	}
	if _, err := v.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestDecoderLineEndings(t *testing.T) {
	export := fixtureExport(t)
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"LF", bytes.NewReader(export)},
		{"CRLF", bytes.NewReader(bytes.ReplaceAll(export, []byte("\n"), []byte("\r\n")))},
		{"NoFinalNewline", bytes.NewReader(bytes.TrimSuffix(export, []byte("\n")))},
		{"OneByteReads", iotest.OneByteReader(bytes.NewReader(export))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := VerifyJSONL(tt.r, testKey().Public().(ed25519.PublicKey))
			if err != nil {
				t.Fatal(err)
			}
			if r.Entries != 8 || r.Checkpoints != 2 {
				t.Errorf("report = %+v", r)
			}
		})
	}
}

func TestDecoderErrors(t *testing.T) {
	good := string(AppendEntryLine(nil, &fixtureEntries(t)[0]))
	entry := strings.TrimSuffix(good, "}\n")
	badBody := strings.Replace(good, `"ttl_s":900`, `"ttl_s":`, 1)
	cp := `{"checkpoint":{"size":1,"head":"` + strings.Repeat("0", 64) + `","at":"t","sig":"x"`
	tests := []struct {
		name  string
		input string
		line  int64
		want  string
	}{
		{"NotJSON", "hello\n", 1, "not a JSON object"},
		{"NotAnObject", good + "[1,2]\n", 2, "not a JSON object"},
		{"Truncated", good + good[:40], 2, "unterminated string"},
		{"BlankLine", good + "\n" + good, 2, "blank line"},
		{"MissingHash", good + strings.Replace(entry, `,"hash":`, `,"hush":`, 1) + "}\n", 2, `unknown field "hush"`},
		{"MissingField", strings.Replace(entry, `"kind":"call.started",`, "", 1) + "}\n", 1, `not a ledger entry: missing "kind"`},
		{"MissingBody", `{"seq":1,"at":"","kind":"","trace":"","actor":"","refs":{},"body_sha256":"","prev":"","hash":""}` + "\n", 1, `not a ledger entry: missing "body"`},
		{"UnknownField", entry + `,"remark":"x"}` + "\n", 1, `unknown field "remark"`},
		{"DuplicateField", entry + `,"seq":2}` + "\n", 1, `duplicate field "seq"`},
		{"DuplicateEscapedField", entry + `,"\u0073eq":2}` + "\n", 1, `duplicate field "seq"`},
		{"BodyAndBodyRaw", entry + `,"body_raw":"{}"}` + "\n", 1, `both "body" and "body_raw"`},
		{"BodySyntax", badBody, 1, "body: at byte " + strconv.Itoa(strings.Index(badBody, `}},"body_sha256"`)) + ": unexpected character '}'"},
		{"BodyUnclosed", strings.Replace(good, `"ttl_s":900}}`, `"ttl_s":900}`, 1), 1, "at byte " + strconv.Itoa(len(good)-2) + ": expected ',' or '}' in object"},
		{"BodyTooDeep", strings.Replace(good, `"ttl_s":900`, `"ttl_s":`+strings.Repeat("[", 600)+strings.Repeat("]", 600), 1), 1, "nesting deeper than 512"},
		{"SeqNotInteger", strings.Replace(good, `"seq":1`, `"seq":"1"`, 1), 1, `"seq" must be an integer`},
		{"SeqFraction", strings.Replace(good, `"seq":1`, `"seq":1.0`, 1), 1, `"seq" must be an integer`},
		{"SeqOverflow", strings.Replace(good, `"seq":1`, `"seq":99999999999999999999`, 1), 1, `"seq" is out of range`},
		{"KindNotString", strings.Replace(good, `"kind":"call.started"`, `"kind":null`, 1), 1, `"kind" must be a string`},
		{"RefsNotObject", strings.Replace(good, `"refs":{}`, `"refs":[]`, 1), 1, `"refs" must be an object of strings`},
		{"RefNotString", strings.Replace(good, `"refs":{}`, `"refs":{"a":1}`, 1), 1, `"refs" must be a string`},
		{"DuplicateRef", strings.Replace(good, `"refs":{}`, `"refs":{"a":"1","a":"2"}`, 1), 1, `duplicate ref "a"`},
		{"InvalidUTF8", strings.Replace(good, "agent:planner", "agent:\xffplanner", 1), 1, "actor: at byte"},
		{"TrailingData", strings.TrimSuffix(good, "\n") + " x\n", 1, "unexpected data after the JSON object"},
		{"EntryAndCheckpoint", entry + `,"checkpoint":{"size":1,"head":"h","at":"t","sig":"s"}}` + "\n", 1, "an entry or a checkpoint, not both"},
		{"CheckpointMissingSig", good + strings.TrimSuffix(cp, `,"sig":"x"`) + "}}\n", 2, `not a checkpoint: missing "sig"`},
		{"CheckpointUnknownField", cp + `,"by":"me"}}` + "\n", 1, `unknown checkpoint field "by"`},
		{"CheckpointDuplicateField", cp + `,"at":"u"}}` + "\n", 1, `duplicate checkpoint field "at"`},
		{"CheckpointNotObject", `{"checkpoint":[]}` + "\n", 1, `"checkpoint" must be an object`},
		{"CheckpointSizeNotInteger", strings.Replace(cp, `"size":1`, `"size":1e3`, 1) + "}}\n", 1, `"size" must be an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tt.input))
			var err error
			for err == nil {
				_, err = d.Next()
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error = %v, want a *LineError", err)
			}
			if le.Line != tt.line || !strings.Contains(le.Err.Error(), tt.want) {
				t.Errorf("error = %q, want line %d and %q", err, tt.line, tt.want)
			}
			if _, again := d.Next(); again != err {
				t.Errorf("Next after an error = %v, want the same error", again)
			}
		})
	}
}

func TestDecoderLineTooLong(t *testing.T) {
	export := fixtureExport(t)
	first := bytes.IndexByte(export, '\n') // length of line 1 without its end
	tests := []struct {
		name   string
		input  []byte
		max    int
		wantOK bool
	}{
		{"Exact", export, first, true},
		{"OneOver", export, first - 1, false},
		{"ExactCRLF", bytes.ReplaceAll(export, []byte("\n"), []byte("\r\n")), first, true},
		{"OneOverCRLF", bytes.ReplaceAll(export, []byte("\n"), []byte("\r\n")), first - 1, false},
		{"BeyondReaderBuffer", append(bytes.Repeat([]byte(" "), 100<<10), export...), 90 << 10, false},
		{"LongLineAllowed", append(bytes.Repeat([]byte(" "), 100<<10), export...), 200 << 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(bytes.NewReader(tt.input))
			d.SetMaxLine(tt.max)
			_, err := d.Next()
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				return
			}
			var le *LineError
			want := fmt.Sprintf("longer than %d bytes", tt.max)
			if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want line 1 %s", err, want)
			}
		})
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(fixtureExport(t)[:100]), iotest.ErrReader(boom))
	_, err := NewDecoder(r).Next()
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want it to wrap %v", err, boom)
	}
}

// rebody returns the entry line with its inline body replaced by body and
// body_sha256 made to match, as a forger who cannot recompute the
// canonical hash would.
func rebody(t *testing.T, line, body string) string {
	t.Helper()
	l, err := NewDecoder(strings.NewReader(line)).Next()
	if err != nil {
		t.Fatal(err)
	}
	line = strings.Replace(line, `"body":`+string(l.Entry.Body), `"body":`+body, 1)
	return strings.Replace(line, l.Entry.BodySHA256, bodySHA256([]byte(body)), 1)
}

func TestVerifyJSONLErrors(t *testing.T) {
	export := string(fixtureExport(t))
	lines := strings.SplitAfter(export, "\n")
	tests := []struct {
		name   string
		export string
		line   int64 // 0: no line is at fault
		seq    int64
		reason string
	}{
		{"BodyByteChanged", strings.Replace(export, "SLOW DOWN", "SLOW DAWN", 1), 1, 1, "body_sha256 does not match"},
		{"PrettyBodyChanged", strings.Replace(export, `\"queued\"`, `\"sent\"`, 1), 2, 2, "body_sha256 does not match"},
		{"LineDeleted", strings.Replace(export, lines[5], "", 1), 6, 5, "missing: the next entry has seq 6"},
		{"BodyDuplicateKey", rebody(t, lines[0], `{"a":1,"b":2,"a":3}`), 1, 1, `cannot hash the entry: body at byte 13: duplicate key "a"`},
		{"BodyBigInteger", rebody(t, lines[0], `[9007199254740993]`), 1, 1, "cannot hash the entry: body at byte 1: integer 9007199254740993 beyond ±2^53"},
		{"TailCut", strings.Join(lines[:7], "") + lines[9], 0, 7, "missing: a checkpoint covers 8 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := VerifyJSONL(strings.NewReader(tt.export), testKey().Public().(ed25519.PublicKey))
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.reason) {
				t.Fatalf("error = %v, want seq %d and %q", err, tt.seq, tt.reason)
			}
			var le *LineError
			if got := errors.As(err, &le); got != (tt.line != 0) || (got && le.Line != tt.line) {
				t.Errorf("error = %v, want line %d", err, tt.line)
			}
		})
	}
}

func TestNoteLine(t *testing.T) {
	note := []byte("custody/ledger/x\n1\nAAAA\nhead 00\n\n\u2014 custody/ledger/x c2lnbmF0dXJl\n")
	line := AppendNoteLine(nil, note)
	l, err := NewDecoder(bytes.NewReader(line)).Next()
	if err != nil || !bytes.Equal(l.Note, note) || l.Entry != nil || l.Checkpoint != nil {
		t.Fatalf("note line %q decoded to %+v, %v", line, l, err)
	}
	// The chain's verification passes over note lines.
	export := fixtureExport(t)
	withNotes := append(append(bytes.Clone(line), export...), line...)
	want, err := VerifyJSONL(bytes.NewReader(export), testKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	got, err := VerifyJSONL(bytes.NewReader(withNotes), testKey().Public().(ed25519.PublicKey))
	if err != nil || got != want {
		t.Fatalf("with note lines: %+v, %v; without: %+v", got, err, want)
	}
}

// TestVerifyJSONLSeeing: every line reaches seen, in order, and the
// verdict is VerifyJSONLKeys's, on a good export and on a tampered one.
func TestVerifyJSONLSeeing(t *testing.T) {
	pub := testKey().Public().(ed25519.PublicKey)
	good := fixtureExport(t)
	bad := bytes.Replace(good, []byte(`"seq":2`), []byte(`"seq":9`), 1)
	for name, export := range map[string][]byte{"good": good, "tampered": bad} {
		var again []byte
		seen := func(l Line) {
			switch {
			case l.Entry != nil:
				again = AppendEntryLine(again, l.Entry)
			case l.Checkpoint != nil:
				again = AppendCheckpointLine(again, *l.Checkpoint)
			}
		}
		got, gerr := VerifyJSONLSeeing(bytes.NewReader(export), seen, pub)
		want, werr := VerifyJSONLKeys(bytes.NewReader(export), pub)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: %+v, %v; VerifyJSONLKeys: %+v, %v", name, got, gerr, want, werr)
		}
		if name == "good" && !bytes.Equal(again, export) {
			t.Errorf("the lines seen, re-encoded, differ from the export:\n%s", again)
		}
		if name == "tampered" && (gerr == nil || len(again) == 0) {
			t.Errorf("tampered: %v, %d bytes seen", gerr, len(again))
		}
	}
}
