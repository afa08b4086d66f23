package sqlite

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/tlog"
)

var update = flag.Bool("update", false, "rewrite the export that tlog/independent checks")

// independentFixture is the export tlog/independent verifies with
// golang.org/x/mod/sumdb/note alone.
const independentFixture = "../../tlog/independent/testdata"

// TestIndependentFixture checks that the export tlog/independent reads
// still verifies with this code, so that the independent check keeps
// checking what custody writes; -update writes it anew from a new store.
func TestIndependentFixture(t *testing.T) {
	ctx := context.Background()
	export, pubPEM := filepath.Join(independentFixture, "ledger.jsonl"), filepath.Join(independentFixture, "ledger.pub")
	if *update {
		db := openTest(t, Options{CheckpointEvery: 16})
		for i := range 50 {
			mustAppend(t, db, entry("k", "t", map[string]string{"n": "x"}, i))
		}
		if _, err := db.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := db.ExportJSONL(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(export, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pubPEM, ledger.MarshalPublicKey(db.PublicKey()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	keyText, err := os.ReadFile(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ledger.ParsePublicKey(keyText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.VerifyJSONL(bytes.NewReader(text), pub); err != nil {
		t.Fatal(err)
	}
	c := tlog.NewNoteChecker([]ed25519.PublicKey{pub}, nil, 0)
	d := ledger.NewDecoder(bytes.NewReader(text))
	for {
		l, err := d.Next()
		if err != nil {
			break
		}
		if l.Entry != nil {
			err = c.Entry(l.Entry.Hash)
		} else if l.Note != nil {
			err = c.Note(l.Note)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.Notes() != 4 {
		t.Fatalf("%d notes in the fixture, want 4", c.Notes())
	}
}
