package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestCheckpointNote: GET /v1/ledger/checkpoint answers the signed note
// itself to a client asking for text/plain, as a tlog-tiles log serves
// /checkpoint, and JSON by default.
func TestCheckpointNote(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		e.call("", "get_time", `{"zone":"UTC"}`)
	}
	cp, err := e.db.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	get := func(accept string) response {
		req, err := http.NewRequest("GET", e.srv.URL+"/v1/ledger/checkpoint", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+auditorToken)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return e.send(req)
	}
	for _, accept := range []string{"text/plain", "text/plain, application/json;q=0.5", "text/*"} {
		res := get(accept)
		if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("Accept %q: %d %s %s", accept, res.Status, res.Header.Get("Content-Type"), res.Body)
		}
		vkey, err := note.NewEd25519VerifierKey(e.db.Origin(), e.db.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Open(res.Body, note.VerifierList(v))
		if err != nil {
			t.Fatalf("Accept %q: the note does not verify with the log's key: %v\n%s", accept, err, res.Body)
		}
		lines := strings.Split(n.Text, "\n")
		if len(lines) < 3 || lines[0] != e.db.Origin() || lines[1] != "3" || lines[3] != "head "+cp.Head {
			t.Fatalf("Accept %q: note text %q, want origin %s, size 3, head %s", accept, n.Text, e.db.Origin(), cp.Head)
		}
	}
	for _, accept := range []string{"", "application/json", "*/*", "application/json, text/plain", "text/plain;q=0.1, application/json"} {
		res := get(accept)
		var body struct {
			Checkpoint struct{ Size int64 } `json:"checkpoint"`
			PublicKey  string               `json:"public_key"`
		}
		if err := json.Unmarshal(res.Body, &body); res.Status != 200 || err != nil || body.Checkpoint.Size != 3 || body.PublicKey == "" {
			t.Fatalf("Accept %q: want the JSON form: %d %s", accept, res.Status, res.Body)
		}
		if !strings.Contains(res.Header.Get("Vary"), "Accept") {
			t.Errorf("Accept %q: no Vary: Accept", accept)
		}
	}
}
