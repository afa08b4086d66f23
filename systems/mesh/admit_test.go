package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/custody-dev/custody"
)

// admitReference is what the receive path did before admitAdvisory read
// numbers and fields in one pass: hashableNumbers, then encoding/json.
func admitReference(raw []byte) (Advisory, error) {
	if err := hashableNumbers(raw); err != nil {
		return Advisory{}, notCanonical(kindAdvisory, err)
	}
	var adv Advisory
	if err := json.Unmarshal(raw, &adv); err != nil {
		return Advisory{}, &custody.Error{Kind: custody.EINVALID, Message: "advisory does not decode", Err: err}
	}
	return adv, nil
}

// decodeAdvisory decodes raw with admitAdvisory's reader alone, without
// its number check, falling back to encoding/json as admitAdvisory does.
func decodeAdvisory(raw []byte) (Advisory, error) {
	r := advReader{in: raw}
	var adv Advisory
	if r.advisory(&adv) {
		return adv, nil
	}
	return unmarshalAdvisory(raw)
}

// sameAdmission fails t unless admitAdvisory and decodeAdvisory give for
// raw what admitReference and encoding/json give.
func sameAdmission(t *testing.T, raw []byte) {
	t.Helper()
	got, err := admitAdvisory(raw)
	want, werr := admitReference(raw)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: admitAdvisory err = %v, reference %v", raw, err, werr)
	}
	if err != nil {
		if err.Error() != werr.Error() || custody.ErrorKind(err) != custody.ErrorKind(werr) {
			t.Fatalf("%q: admitAdvisory err = %v (%s), reference %v (%s)", raw, err, custody.ErrorKind(err), werr, custody.ErrorKind(werr))
		}
	} else if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", raw, got, want)
	}
	dec, derr := decodeAdvisory(raw)
	var ref Advisory
	rerr := json.Unmarshal(raw, &ref)
	if (derr == nil) != (rerr == nil) || derr == nil && !reflect.DeepEqual(dec, ref) {
		t.Fatalf("%q: decodeAdvisory = %+v, %v; encoding/json %+v, %v", raw, dec, derr, ref, rerr)
	}
}

// admissionCorpus returns advisories around the edges of the reader: the
// numbers canonical JSON refuses, duplicate and escaped string fields,
// more string values than the reader keeps, and shapes it leaves to
// encoding/json.
func admissionCorpus(t testing.TB) [][]byte {
	env := newEnv(t)
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{RFWActive: Bool(true), WFIGSProximityKM: Float(3.25)})
	s := string(raw)
	docs := [][]byte{raw}
	for _, v := range numberVariants(raw) {
		docs = append(docs, v.raw)
	}
	tail := func(members string) []byte { return []byte(s[:len(s)-1] + members + "}") }
	for _, members := range []string{
		`,"node_id":"forward-ridge-2"`,
		`,"node_id":"forward\u002dridge-2"`,
		`,"node_id":"forward\u002dridge-2","node_id":"forward-ridge-3"`,
		`,"advisory_text":"x","advisory_text":"y\n","schema_version":"z"`,
		`,"composer_signature":{"adapter":"a","adapter":"b\tc","model":"m"}`,
		`,"composer_signature":{"adapter":"a\tb","adapter":"c"}`,
		`,"detector_state":{"tier":"warning","tier":"crit\u0069cal"}`,
		`,"detector_state":{"tier":"crit\u0069cal","tier":"warning"}`,
		strings.Repeat(`,"node_id":"n"`, 12),
		strings.Repeat(`,"node_id":"n"`, 2) + `,"node_id":"\u006e"` + strings.Repeat(`,"observation_ts":"t"`, 10),
		`,"sensor_reading":{"ambient_c":1e400}`,
		`,"sensor_reading":{"ambient_c":1e21,"ambient_c":5}`,
		`,"sensor_reading":{"ambient_c":-9007199254740993,"thermal_anomaly_pixels":1.5}`,
		`,"sensor_reading":{"thermal_anomaly_pixels":1.5,"ambient_c":-9007199254740993}`,
		`,"sensor_reading":{"thermal_anomaly_pixels":9007199254740993}`,
		`,"sensor_reading":{"thermal_anomaly_pixels":99999999999999999999}`,
		`,"sensor_reading":{"humidity_pct":1234567890123456,"wind_dir_deg":123456789012345}`,
		`,"sensor_reading":{"humidity_pct":-0.0,"wind_dir_deg":0.1e1,"wind_gust_ms":123.456789012345678}`,
		`,"position":{"lat":00,"lon":1}`,
		`,"position":{"lat":1.,"lon":1}`,
		`,"position":{"lat":-,"lon":1}`,
		`,"position":{"lat":1e+,"lon":1}`,
		`,"position":{"lat":1-2,"lon":1}`,
		`,"position":{"lat":12345678901234567890123,"lon":1}`,
		`,"extra":1e400`,
	} {
		docs = append(docs, tail(members))
	}
	return docs
}

// TestAdmitAdvisoryMatchesReference checks that admitAdvisory, which
// checks numbers as it decodes, refuses and decodes exactly as
// hashableNumbers followed by encoding/json.
func TestAdmitAdvisoryMatchesReference(t *testing.T) {
	for _, raw := range admissionCorpus(t) {
		sameAdmission(t, raw)
	}
}

// TestAggregatorAdmitMatchesCheck checks the receive path against
// Wire.Check: an advisory Check refuses is refused on receive with the
// same error, and one it accepts decodes as encoding/json decodes it.
func TestAggregatorAdmitMatchesCheck(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	w := env.wire("aggregator")
	for _, raw := range admissionCorpus(t) {
		_, _, err := a.admit(Msg{Data: raw})
		cerr := w.Check(kindAdvisory, raw)
		if cerr != nil {
			if err == nil || err.Error() != cerr.Error() {
				t.Fatalf("%s: admit err = %v, Check %v", raw, err, cerr)
			}
			continue
		}
		want, werr := unmarshalAdvisory(raw)
		if werr != nil {
			if err == nil || err.Error() != werr.Error() {
				t.Fatalf("%s: admit err = %v, decode %v", raw, err, werr)
			}
			continue
		}
		if _, cerr := a.checkAdvisory("", want); (err == nil) != (cerr == nil) {
			t.Fatalf("%s: admit err = %v, checkAdvisory %v", raw, err, cerr)
		}
	}
}

// FuzzAdmitAdvisory compares admitAdvisory with its reference on any
// bytes.
func FuzzAdmitAdvisory(f *testing.F) {
	for _, raw := range admissionCorpus(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAdmission(t, raw)
	})
}

// refJSONNumber is the grammar of a JSON number, spelt out.
func refJSONNumber(lit string) bool {
	i := 0
	digits := func() int {
		d := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		return i - d
	}
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

// checkNumber fails t unless scanNumber reads lit, a run of number bytes
// followed by a comma, as the JSON grammar, strconv.ParseFloat and
// hashableNumbers do.
func checkNumber(t *testing.T, lit string) {
	t.Helper()
	var n numLit
	in := []byte(lit + ",")
	ok := scanNumber(&n, in, 0)
	if want := refJSONNumber(lit); ok != want {
		t.Fatalf("scanNumber(%q) = %v, want %v", lit, ok, want)
	}
	if !ok {
		return
	}
	if string(n.text) != lit {
		t.Fatalf("scanNumber(%q) read %q", lit, n.text)
	}
	if n.hashable() != refSafe(lit) {
		t.Fatalf("%q: hashable = %v, hashableNumbers would say %v", lit, n.hashable(), refSafe(lit))
	}
	if n.hashable() && hashableNumbers([]byte(lit)) != nil {
		t.Fatalf("%q: hashable, but hashableNumbers refuses it", lit)
	}
	want, werr := strconv.ParseFloat(lit, 64)
	if f, ok := n.exactFloat(); ok && (werr != nil || math.Float64bits(f) != math.Float64bits(want)) {
		t.Fatalf("exactFloat(%q) = %v, strconv %v (%v)", lit, f, want, werr)
	}
}

// refSafe is hashableNumbers' test of a literal it accepts without asking
// the ledger.
func refSafe(lit string) bool {
	j := 0
	if lit[0] == '-' {
		j++
	}
	for j < len(lit) && lit[j] >= '0' && lit[j] <= '9' {
		j++
	}
	return j <= 15 && !strings.ContainsAny(lit[j:], "eE+-")
}

// TestScanNumber checks scanNumber on numbers made at random from the
// bytes numbers are spelt with, and on decimals of up to 15 digits.
func TestScanNumber(t *testing.T) {
	for _, lit := range []string{"0", "-0", "-0.0", "00", "01", "1.", ".1", "-", "+1", "1e", "1e+", "1E-0", "1e5",
		"123456789012345", "1234567890123456", "999999999999999.9", "0.000000000000001", "9007199254740993",
		"-123456789012345", "1.5e308", "2.2250738585072014e-308", "1-", "1..2", "1.2.3", "1ee5"} {
		checkNumber(t, lit)
	}
	rng := rand.New(rand.NewPCG(5, 8))
	const spelling = "0123456789-+.eE"
	for range 200000 {
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = spelling[rng.IntN(len(spelling))]
		}
		checkNumber(t, string(b))
	}
	for range 200000 {
		digits := strconv.FormatUint(rng.Uint64N(1_000_000_000_000_000), 10)
		if p := rng.IntN(len(digits) + 1); p < len(digits) {
			digits = strings.TrimLeft(digits[:p], "0") + "." + digits[p:]
			if digits[0] == '.' {
				digits = "0" + digits
			}
		}
		if rng.IntN(2) == 0 {
			digits = "-" + digits
		}
		checkNumber(t, digits)
	}
}

// FuzzScanNumber checks scanNumber on any literal.
func FuzzScanNumber(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "1e5", "123456789012345.5", "9007199254740993"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		for i := range len(lit) {
			if !numberByte(lit[i]) {
				return // the literal is the run of number bytes before it
			}
		}
		checkNumber(t, lit)
	})
}

// refSkipString is the byte loop skipString replaced.
func refSkipString(raw []byte, i int) int {
	for i++; i < len(raw) && raw[i] != '"'; i++ {
		if raw[i] == '\\' {
			i++
		}
	}
	return min(i+1, len(raw))
}

// TestSkipString checks skipString against the byte loop on strings of
// quotes, backslashes and letters.
func TestSkipString(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := make([]byte, 1+rng.IntN(24))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			b[i] = `"\\ab`[rng.IntN(4)]
		}
		if got, want := skipString(b, 0), refSkipString(b, 0); got != want {
			t.Fatalf("skipString(%q) = %d, want %d", b, got, want)
		}
	}
}

// TestPlain checks plain on every byte in every position of a string:
// only a plain string in valid UTF-8 is read as one.
func TestPlain(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
			r := advReader{in: append([]byte{'"'}, append(w, '"')...)}
			s, ok := r.plain()
			switch {
			case c == '"':
				want, w = true, w[:pos]
			case c >= 0x80:
				want = false // a lone byte above ASCII is not UTF-8
			}
			if ok != want || ok && !bytes.Equal(s, w) {
				t.Fatalf("plain with %#x at %d = %q, %v", c, pos, s, ok)
			}
		}
	}
}

// TestLoopbackSubscriptions checks delivery in subscription order, and
// that neither an unsubscribed handler nor a closed loopback delivers.
func TestLoopbackSubscriptions(t *testing.T) {
	ctx := context.Background()
	l := NewLoopback(Faults{})
	var got []string
	sub := func(name, pattern string) Subscription {
		s, err := l.Subscribe(pattern, func(context.Context, Msg) { got = append(got, name) })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := sub("a", "mesh.advisory.*")
	sub("b", "mesh.>")
	sub("c", "mesh.broadcast.*")
	sub("d", "mesh.advisory.n1")
	_ = l.Publish(ctx, Msg{Subject: "mesh.advisory.n1"})
	if want := "a b d"; strings.Join(got, " ") != want {
		t.Fatalf("delivered to %v, want %s", got, want)
	}
	got = nil
	if err := a.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	_ = l.Publish(ctx, Msg{Subject: "mesh.advisory.n1"})
	if want := "b d"; strings.Join(got, " ") != want {
		t.Fatalf("delivered to %v after unsubscribe, want %s", got, want)
	}
	got = nil
	_ = l.Close()
	if err := a.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	l.deliver(ctx, Msg{Subject: "mesh.advisory.n1"})
	if _, err := l.Subscribe("mesh.>", func(context.Context, Msg) {}); err == nil || len(got) != 0 {
		t.Fatalf("closed loopback: subscribe err %v, delivered to %v", err, got)
	}
}

// TestReceivedEntryRefs checks the refs of an advisory recorded as
// received: its node, its kind, its signer and the digest of its bytes,
// which is the entry's body_sha256 (the signature is checked by
// TestLedgerSignatureCoversRecordedBody).
func TestReceivedEntryRefs(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", clearReading())
	es := env.entries(t, EntryReceived, nil)
	want := map[string]string{"node_id": "forward-ridge-1", "mesh_kind": "advisory", RefSigner: env.identity("forward-ridge-1").PublicKey}
	if len(es) == 1 && es[0].Refs[RefSignature] != "" {
		want[RefSignature] = es[0].Refs[RefSignature]
		want[RefMessageSHA256] = es[0].BodySHA256
	}
	if len(es) != 1 || !reflect.DeepEqual(es[0].Refs, want) || es[0].Trace != "mesh-forward-ridge-1" {
		t.Fatalf("entries %+v, want one with refs %v", es, want)
	}
}

// TestStoredAdvisoryOwnsItsID checks that a node's id in the aggregator is
// its own copy, not a slice of the strings of the advisory that first
// named it.
func TestStoredAdvisoryOwnsItsID(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", clearReading())
	env.clock.Add(time.Minute)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", clearReading())
	st := a.nodes["forward-ridge-1"]
	if st == nil || st.id != "forward-ridge-1" || st.sector != "11SKU" {
		t.Fatalf("node state %+v", st)
	}
	if unsafe.StringData(st.id) == unsafe.StringData(st.adv.NodeID) {
		t.Fatal("the node's id is the advisory's")
	}
}
