package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody/tlog"
)

// TestServedNotesCarryTheWitnessCosignature: once the real litewitness
// has cosigned checkpoints, every note the API serves of them carries its
// cosignature, checked with the witness's key alone as C2SP
// tlog-cosignature says, and check-receipt accepts the receipt.
func TestServedNotesCarryTheWitnessCosignature(t *testing.T) {
	bin := litewitnessDir()
	if bin == "" {
		t.Skip("litewitness not found: run .ci/litewitness.sh (or set CUSTODY_LITEWITNESS_DIR)")
	}
	w := startLitewitness(t, bin)
	wpub := vkeyPublic(t, w.vkey)
	data := filepath.Join(t.TempDir(), "data")
	origin, logKey := storeOrigin(t, data)
	w.follow(t, origin, logKey)
	// Each clean stop seals a checkpoint the witness cosigns.
	serveCalls(t, data, w, 3)
	serveCalls(t, data, w, 2)
	notes := storeNotes(t, data)
	if len(notes) < 2 {
		t.Fatalf("%d checkpoint notes, want one per run", len(notes))
	}
	first, last := notes[0].Size, notes[len(notes)-1].Size

	base, _, stop := startServe(t, map[string]string{}, "--data", data, "--witness", w.url+"="+w.vkey)
	defer stop()
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	operator := readToken(t, filepath.Join(data, operatorTokenFile))

	body := getBody(t, fmt.Sprintf("%s/v1/ledger/proof?seq=1&size=%d", base, last), agent)
	var r tlog.Receipt
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Size != last {
		t.Fatalf("proof: %s", body)
	}
	if err := specCheckCosigned(r.Checkpoint, w.name, wpub); err != nil {
		t.Fatalf("/v1/ledger/proof: %v", err)
	}
	body = getBody(t, fmt.Sprintf("%s/v1/ledger/consistency?from=%d&to=%d", base, first, last), agent)
	var c tlog.Consistency
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.From != first || c.To != last {
		t.Fatalf("consistency: %s", body)
	}
	for _, n := range []string{c.FromCheckpoint, c.ToCheckpoint} {
		if err := specCheckCosigned(n, w.name, wpub); err != nil {
			t.Fatalf("/v1/ledger/consistency: %v", err)
		}
	}

	// The text/plain checkpoint is the latest note, cosigned once the
	// witness has seen it (serve's start may seal a new one).
	req, _ := http.NewRequest("GET", base+"/v1/ledger/checkpoint", nil)
	req.Header.Set("Authorization", "Bearer "+operator)
	req.Header.Set("Accept", "text/plain")
	v, err := note.NewVerifier(logKey)
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	waitFor(t, "a cosigned text/plain checkpoint", func() bool {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("checkpoint: %d %v %s", res.StatusCode, err, b)
		}
		msg = string(b)
		return specCheckCosigned(msg, w.name, wpub) == nil
	})
	n, err := note.Open([]byte(msg), note.VerifierList(v))
	if err != nil || !strings.HasPrefix(n.Text, origin+"\n") {
		t.Fatalf("the text/plain checkpoint does not verify with the log's key: %v\n%s", err, msg)
	}

	receipt := writeFile(t, t.TempDir(), "receipt.json", string(mustJSON(t, r)))
	code, out, errOut := cli(t, data, "ledger", "check-receipt", "--receipt", receipt, "--pubkey", filepath.Join(data, "signing.pub"), "--witness", w.name+"="+w.vkey)
	if code != 0 || !strings.Contains(out, "cosigned by "+w.name) {
		t.Fatalf("check-receipt of the API's receipt: exit %d: %s%s", code, out, errOut)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
