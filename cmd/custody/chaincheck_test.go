package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/sqlite"
)

// chainSize is how many entries the stores of the chain check tests hold
// before serve starts; tamperedSeq is the entry the tampering changes,
// well inside the last checkpoint.
const (
	chainSize   = 12
	tamperedSeq = 5
)

// newChainStore writes chainSize entries to a SQLite store in dir and
// closes it, which signs a checkpoint over the last.
func newChainStore(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{CheckpointEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= chainSize; i++ {
		_, err := db.Append(ctx, custody.Entry{Kind: "test.entry", Trace: "chain", Actor: "tester", Body: fmt.Appendf(nil, `{"i":%d}`, i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// tamper runs stmts on the closed store in dir, its append-only guards
// dropped first, as someone editing the file would.
func tamper(t *testing.T, dir string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	stmts = append([]string{`DROP TRIGGER entries_no_update`, `DROP TRIGGER entries_no_delete`}, stmts...)
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// health is GET /healthz: its status and body.
func health(t *testing.T, base string) (int, string) {
	t.Helper()
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// ledgerEntries reads custody_ledger_entries from /metrics.
func ledgerEntries(t *testing.T, base string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^custody_ledger_entries (\d+)$`).FindStringSubmatch(getText(t, base+"/metrics"))
	if m == nil {
		t.Fatal("/metrics has no custody_ledger_entries")
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestServeVerifiesWholeChain edits a closed store in the middle of its
// chain, under its last checkpoint, where opening it does not look: serve
// still comes up, then its full verification finds the edit, /healthz
// answers 503 naming the seq, and every write is refused: the ledger does
// not grow.
func TestServeVerifiesWholeChain(t *testing.T) {
	edited := `{"i":99}`
	sum := sha256.Sum256([]byte(edited))
	tests := []struct {
		name string
		sql  []string
	}{
		{"EditedBody", []string{fmt.Sprintf(`UPDATE entries SET body = CAST('%s' AS BLOB) WHERE seq = %d`, edited, tamperedSeq)}},
		{"EditedBodyAndDigest", []string{fmt.Sprintf(`UPDATE entries SET body = CAST('%s' AS BLOB), body_sha256 = X'%s' WHERE seq = %d`,
			edited, hex.EncodeToString(sum[:]), tamperedSeq)}},
		{"Deleted", []string{fmt.Sprintf(`DELETE FROM entries WHERE seq = %d`, tamperedSeq)}},
		{"Swapped", []string{
			fmt.Sprintf(`UPDATE entries SET seq = -1 WHERE seq = %d`, tamperedSeq),
			fmt.Sprintf(`UPDATE entries SET seq = %d WHERE seq = %d`, tamperedSeq, tamperedSeq+1),
			fmt.Sprintf(`UPDATE entries SET seq = %d WHERE seq = -1`, tamperedSeq+1),
		}},
		{"EditedActor", []string{fmt.Sprintf(`UPDATE entries SET actor = 'mallory' WHERE seq = %d`, tamperedSeq)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			newChainStore(t, data)
			tamper(t, data, tt.sql...)
			base, _, stop := startServe(t, map[string]string{}, "--data", data)
			defer stop()
			var code int
			var body string
			if !within(60*time.Second, func() bool { code, body = health(t, base); return code == http.StatusServiceUnavailable }) {
				t.Fatalf("/healthz never failed: %d %s", code, body)
			}
			if want := fmt.Sprintf("seq %d", tamperedSeq); !strings.Contains(body, want) {
				t.Errorf("/healthz 503 does not name %q: %s", want, body)
			}
			metrics := getText(t, base+"/metrics")
			for _, want := range []string{`custody_ledger_verification{state="failed"} 1`, fmt.Sprintf("custody_ledger_verification_bad_seq %d", tamperedSeq)} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
			size := ledgerEntries(t, base)
			agent := readToken(t, filepath.Join(data, agentTokenFile))
			for _, call := range []string{`{"tool":"get_time","arguments":{"zone":"UTC"}}`, `{"tool":"write_note","arguments":{"title":"t","text":"a note"}}`} {
				code, answer, err := postStatus(base+"/v1/calls", agent, call)
				if err != nil {
					t.Fatal(err)
				}
				if code != http.StatusServiceUnavailable || !strings.Contains(answer, custody.EUNAVAILABLE) {
					t.Errorf("a call on the fenced store: %d %s; want 503 unavailable", code, answer)
				}
			}
			if got := ledgerEntries(t, base); got != size {
				t.Errorf("the ledger grew from %d to %d entries after it failed verification", size, got)
			}
		})
	}
}

// TestServeVerifiesIntactChain: an untampered store verifies to its end
// and /healthz reports it, with the size verified.
func TestServeVerifiesIntactChain(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	newChainStore(t, data)
	base, _, stop := startServe(t, map[string]string{}, "--data", data)
	defer stop()
	var h struct {
		Status       string
		Verification struct {
			State      string
			Size       int64
			StartedAt  string `json:"started_at"`
			FinishedAt string `json:"finished_at"`
		}
	}
	ok := within(60*time.Second, func() bool {
		code, body := health(t, base)
		if code != http.StatusOK {
			t.Fatalf("/healthz: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatal(err)
		}
		if h.Status != h.Verification.State || (h.Status != "verifying" && h.Status != "ok") {
			t.Fatalf("/healthz status %q, verification %q: want both verifying, then ok", h.Status, h.Verification.State)
		}
		return h.Status == "ok"
	})
	if !ok {
		t.Fatalf("the verification never finished: %+v", h)
	}
	if h.Verification.Size < chainSize || h.Verification.StartedAt == "" || h.Verification.FinishedAt == "" {
		t.Errorf("verification %+v: want at least %d entries, when it started and ended", h.Verification, chainSize)
	}
	metrics := getText(t, base+"/metrics")
	if !strings.Contains(metrics, `custody_ledger_verification{state="ok"} 1`) || !strings.Contains(metrics, "custody_ledger_verified_entries ") {
		t.Errorf("/metrics does not report the verification:\n%s", metrics)
	}
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	if code, answer, err := postStatus(base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`); err != nil || code != http.StatusOK {
		t.Fatalf("a call on the verified store: %d %s %v", code, answer, err)
	}
}
