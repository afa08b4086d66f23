package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/custody-dev/custody"
)

// toolCallBody is a realistic recorded tool call of about 1 KB: the
// arguments and result of an issue_vms_update, keys in writer order.
const toolCallBody = `{"tool":"issue_vms_update","trace_id":"tr-5b1f0c9e2a7d4e11","arguments":` +
	`{"sign_id":"VMS-A12-0417","corridor":"A12 northbound","message":{"lines":["ACCIDENT AHEAD","LEFT LANE CLOSED","REDUCE SPEED"],` +
	`"pictogram":"warning","flash":true},"speed_limit_kmh":60,"valid_from":"2026-03-01T12:00:00.000000Z",` +
	`"valid_until":"2026-03-01T13:30:00.000000Z","reason":"Collision reported at km 41.3 by two callers; ` +
	`emergency services en route. \"Left lane\" blocked per camera CAM-41.","brief_id":"brief-20260301-0042",` +
	`"approval_request_id":"apr-7c2e91d4","priority":2,"confidence":0.87},"result":{"vms_update_id":"u-20260301-1187",` +
	`"status":"queued","sign":{"id":"VMS-A12-0417","lat":52.0907,"lon":5.1214,"km":39.8,"lanes":3},` +
	`"scheduled":[{"at":"2026-03-01T12:00:05.000000Z","action":"display"},{"at":"2026-03-01T13:30:00.000000Z","action":"clear"}],` +
	`"operator_ack":null,"warnings":[],"latency_ms":143,"checksum":"sha256:9b0c4f2e6d1a8b3c5e7f9a1b3c5d7e9f"}}`

func BenchmarkCanonicalize(b *testing.B) {
	body := []byte(toolCallBody)
	b.Run("ledger", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var c canon
		var dst []byte
		for b.Loop() {
			var err error
			if dst, err = c.appendDoc(dst[:0], body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ledger_Canonicalize", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Canonicalize(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchChain returns a sealed chain of n typical entries, bodies of 300
// to 800 bytes.
func benchChain(b *testing.B, n int) []custody.Entry {
	b.Helper()
	entries := make([]custody.Entry, n)
	prev := ""
	for i := range entries {
		pad := bytes.Repeat([]byte("x"), i%500)
		e := &entries[i]
		*e = custody.Entry{
			Seq: int64(i + 1), At: "2026-03-01T12:00:00.000000Z", Kind: custody.KindCallSucceeded,
			Trace: "tr-5b1f0c9e2a7d4e11", Actor: "agent:planner",
			Refs: map[string]string{"vms_update_id": fmt.Sprintf("u-%d", i), "brief_id": "brief-20260301-0042"},
			Body: fmt.Appendf(nil, `{"tool":"issue_vms_update","arguments":{"sign_id":"VMS-A12-%04d","message":`+
				`{"lines":["ACCIDENT AHEAD","LEFT LANE CLOSED"],"flash":true},"speed_limit_kmh":60,"note":"%s"},`+
				`"result":{"vms_update_id":"u-%d","status":"queued","latency_ms":%d,"lat":52.0907}}`, i%9999, pad, i, i%300),
		}
		if err := Seal(prev, e); err != nil {
			b.Fatal(err)
		}
		prev = e.Hash
	}
	return entries
}

// BenchmarkVerify measures a Verifier over typical entries, against raw
// SHA-256 over the same bytes (prev and the canonical entry) as the floor.
func BenchmarkVerify(b *testing.B) {
	entries := benchChain(b, 4096)
	var body, canon int64
	hashed := make([][]byte, len(entries))
	for i := range entries {
		c, err := AppendEntryCanonical(nil, &entries[i])
		if err != nil {
			b.Fatal(err)
		}
		hashed[i] = append(make([]byte, 32, 32+len(c)), c...)
		body += int64(len(entries[i].Body))
		canon += int64(len(hashed[i]))
	}
	b.Logf("mean body %d bytes, mean prev+canonical entry %d bytes", body/int64(len(entries)), canon/int64(len(entries)))
	b.Run("Verifier", func(b *testing.B) {
		b.ReportAllocs()
		v := NewVerifier(nil)
		i := 0
		for b.Loop() {
			if i == len(entries) {
				v, i = NewVerifier(nil), 0
			}
			if err := v.Entry(&entries[i]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("Entries", func(b *testing.B) {
		// The whole chain a round, as a store or an export hands it over
		// in pages; entries/s counts entries verified.
		n := 0
		for b.Loop() {
			if err := NewVerifier(nil).Entries(entries); err != nil {
				b.Fatal(err)
			}
			n += len(entries)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("SHA256", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if i == len(hashed) {
				i = 0
			}
			sha256.Sum256(entries[i].Body)
			sha256.Sum256(hashed[i])
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}

// BenchmarkVerifyJSONL measures `custody ledger verify` on an export:
// decoding, verifying, and one signed checkpoint every 1000 entries.
func BenchmarkVerifyJSONL(b *testing.B) {
	entries := benchChain(b, 4096)
	var export []byte
	for i := range entries {
		export = AppendEntryLine(export, &entries[i])
		if (i+1)%1000 == 0 {
			export = AppendCheckpointLine(export, SignCheckpoint(testKey(), entries[i].Seq, entries[i].Hash, "t"))
		}
	}
	pub := testKey().Public().(ed25519.PublicKey)
	b.SetBytes(int64(len(export)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyJSONL(bytes.NewReader(export), pub); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(entries))/b.Elapsed().Seconds(), "entries/s")
}
