package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testKey returns a fixed key, so that signatures (ed25519 is
// deterministic) and golden files are stable.
func testKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, ed25519.SeedSize))
}

// fixtureBodies are the bodies of the fixture chain, one of every shape
// the JSONL export treats differently.
func fixtureBodies() []string {
	return []string{
		`{"tool":"issue_vms_update","arguments":{"sign_id":"VMS-12","message":"SLOW DOWN","ttl_s":900}}`,
		"{\n  \"vms_update_id\": \"u-0001\",\n  \"status\": \"queued\"\n}\n",
		`{"reason":"caf\u00e9 \"quoted\" \ud83d\ude00","weights":[1.50,2e-3,1E30],"ok":true}`,
		` {"leading":"space"}`,
		"{\"tab\":\t1}",
		"[\r\n1,2]",
		`"just a string"`,
		`{"b":null,"a":{"z":[],"y":{}}}`,
	}
}

// fixtureEntries returns a sealed chain built from fixtureBodies.
func fixtureEntries(t testing.TB) []custody.Entry {
	t.Helper()
	kinds := []string{custody.KindCallStarted, custody.KindCallSucceeded, custody.KindApprovalRequest, custody.KindApprovalDecided}
	var entries []custody.Entry
	prev := ""
	for i, body := range fixtureBodies() {
		e := custody.Entry{
			Seq:   int64(i + 1),
			At:    "2026-03-01T12:00:0" + string(rune('0'+i)) + ".000000Z",
			Kind:  kinds[i%len(kinds)],
			Trace: "tr-" + string(rune('a'+i%3)),
			Actor: "agent:planner",
			Body:  []byte(body),
		}
		if i%2 == 1 {
			e.Refs = map[string]string{"vms_update_id": "u-0001", "brief_id": "b-7", "é": "ü"}
		}
		if err := Seal(prev, &e); err != nil {
			t.Fatalf("Seal %d: %v", e.Seq, err)
		}
		prev = e.Hash
		entries = append(entries, e)
	}
	return entries
}

// fixtureExport returns the JSONL export of the fixture chain with a
// checkpoint after entry 3 and one at the end.
func fixtureExport(t testing.TB) []byte {
	t.Helper()
	entries := fixtureEntries(t)
	var out []byte
	for i := range entries {
		out = AppendEntryLine(out, &entries[i])
		if e := entries[i]; e.Seq == 3 || i == len(entries)-1 {
			out = AppendCheckpointLine(out, SignCheckpoint(testKey(), e.Seq, e.Hash, "2026-03-01T12:01:00.000000Z"))
		}
	}
	return out
}

// TestGolden pins the hashes and the export format: any change to the
// canonical form, the link hash, the checkpoint message or the JSONL
// encoding changes these bytes. Regenerate with go test -run TestGolden
// -update, and only on purpose.
func TestGolden(t *testing.T) {
	files := map[string][]byte{
		"golden.jsonl":   fixtureExport(t),
		"golden.pub.pem": MarshalPublicKey(testKey().Public().(ed25519.PublicKey)),
	}
	for name, got := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed:\ngot\n%s\nwant\n%s", path, got, want)
		}
	}
}

// TestGoldenVerifies checks the committed export, not a regenerated one,
// against the committed key.
func TestGoldenVerifies(t *testing.T) {
	export, err := os.ReadFile(filepath.Join("testdata", "golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	pemText, err := os.ReadFile(filepath.Join("testdata", "golden.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pemText)
	if err != nil {
		t.Fatal(err)
	}
	r, err := VerifyJSONL(bytes.NewReader(export), pub)
	if err != nil {
		t.Fatalf("VerifyJSONL: %v", err)
	}
	if r.Entries != int64(len(fixtureBodies())) || r.Checkpoints != 2 || !r.Signed {
		t.Errorf("report = %+v", r)
	}
}

// TestEntryHashDefinition recomputes one hash from the definition in the
// package documentation, independently of AppendEntryCanonical.
func TestEntryHashDefinition(t *testing.T) {
	e := custody.Entry{
		Seq: 1, At: "2026-03-01T12:00:00.000000Z", Kind: "call.started", Trace: "tr-1", Actor: "cli",
		Refs: map[string]string{"b": "2", "a": "1"},
		Body: []byte("{ \"y\": 1, \"x\": [true] }"),
	}
	if err := Seal("", &e); err != nil {
		t.Fatal(err)
	}
	bodySum := sha256.Sum256(e.Body)
	canon := `{"actor":"cli","at":"2026-03-01T12:00:00.000000Z","body":{"x":[true],"y":1},` +
		`"body_sha256":"` + hex.EncodeToString(bodySum[:]) + `","kind":"call.started",` +
		`"prev":"` + strings.Repeat("0", 64) + `","refs":{"a":"1","b":"2"},"seq":1,"trace":"tr-1"}`
	sum := sha256.Sum256(append(make([]byte, 32), canon...))
	if want := hex.EncodeToString(sum[:]); e.Hash != want {
		t.Errorf("hash = %s, want %s", e.Hash, want)
	}
	got, err := AppendEntryCanonical(nil, &e)
	if err != nil || string(got) != canon {
		t.Errorf("AppendEntryCanonical = %s, %v\nwant %s", got, err, canon)
	}
}

func TestSealRefuses(t *testing.T) {
	tests := []struct {
		name string
		prev string
		edit func(*custody.Entry)
		want string
	}{
		{"OK", "", func(*custody.Entry) {}, ""},
		{"InvalidBody", "", func(e *custody.Entry) { e.Body = []byte(`{"a":}`) }, "body at byte 5"},
		{"EmptyBody", "", func(e *custody.Entry) { e.Body = nil }, "unexpected end"},
		{"DuplicateKey", "", func(e *custody.Entry) { e.Body = []byte(`{"a":1,"a":1}`) }, "duplicate key"},
		{"BigInteger", "", func(e *custody.Entry) { e.Body = []byte(`[18446744073709551616]`) }, "beyond ±2^53"},
		{"UppercasePrev", strings.Repeat("A", 64), func(*custody.Entry) {}, "not 64 lowercase hex"},
		{"ShortPrev", "abc", func(*custody.Entry) {}, "not 64 lowercase hex"},
		{"InvalidUTF8Kind", "", func(e *custody.Entry) { e.Kind = "k\xff" }, "kind is not valid UTF-8"},
		{"InvalidUTF8Ref", "", func(e *custody.Entry) { e.Refs = map[string]string{"r": "\xc3"} }, "refs is not valid UTF-8"},
		{"InvalidUTF8RefKey", "", func(e *custody.Entry) { e.Refs = map[string]string{"\xff": "v"} }, "refs is not valid UTF-8"},
		{"InvalidUTF8Trace", "", func(e *custody.Entry) { e.Trace = "a\xed\xa0\x80" }, "trace is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := custody.Entry{Seq: 1, At: "2026-03-01T12:00:00.000000Z", Kind: "k", Body: []byte(`{}`)}
			tt.edit(&e)
			err := Seal(tt.prev, &e)
			if tt.want == "" {
				if err != nil || e.Refs == nil || e.Prev != GenesisPrev() {
					t.Fatalf("Seal = %v, entry %+v", err, e)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Seal error = %v, want %q", err, tt.want)
			}
		})
	}
}
