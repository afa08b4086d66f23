package tlog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// fakeWitness follows one log the way C2SP tlog-witness says: it cosigns
// a checkpoint only with a consistency proof from the last one it
// cosigned. Real witnesses are tested against in cmd/custody (litewitness).
type fakeWitness struct {
	t      *testing.T
	pub    ed25519.PublicKey // the log's
	signer note.Signer
	mu     sync.Mutex
	size   uint64
	root   []byte
	answer func(w http.ResponseWriter) bool // when set and true, answers instead
}

func (f *fakeWitness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answer != nil && f.answer(w) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	head, msg, _ := bytes.Cut(body, []byte("\n\n"))
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Scan()
	old, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "old "), 10, 64)
	if err != nil {
		http.Error(w, "bad old", http.StatusBadRequest)
		return
	}
	var proof [][]byte
	for sc.Scan() {
		h, _ := base64.StdEncoding.DecodeString(sc.Text())
		proof = append(proof, h)
	}
	c, _, err := Open(msg, "", f.pub)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if old != f.size {
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "%d\n", f.size)
		return
	}
	if old > 0 && VerifyConsistency(old, c.Size, proof, f.root, c.Root) != nil {
		http.Error(w, "bad consistency proof", http.StatusUnprocessableEntity)
		return
	}
	f.size, f.root = c.Size, c.Root
	w.Write(cosign(f.t, msg, f.signer))
}

// memLog is a log in memory: a tree, its notes and their cosignatures.
type memLog struct {
	priv   ed25519.PrivateKey
	tree   *Tree
	nodes  MemNodes
	notes  []LogNote
	cosigs map[uint64]string
}

func newMemLog(t *testing.T, priv ed25519.PrivateKey) *memLog {
	return &memLog{priv: priv, tree: NewTree(), cosigs: map[uint64]string{}}
}

// grow appends n entries made from seed and signs a checkpoint.
func (l *memLog) grow(t *testing.T, n int, seed byte) {
	t.Helper()
	var last []byte
	for i := range n {
		last = bytes.Repeat([]byte{seed, byte(i), byte(l.tree.Size())}, 11)[:32]
		if err := l.tree.Append(LeafHash(last), l.nodes.Keep); err != nil {
			t.Fatal(err)
		}
	}
	c := Checkpoint{Origin: "custody/ledger/test", Size: l.tree.Size(), Root: l.tree.Root(), Head: hexOf(last)}
	signed, err := Sign(c, l.priv)
	if err != nil {
		t.Fatal(err)
	}
	l.notes = append(l.notes, LogNote{Size: c.Size, Signed: signed})
}

func (l *memLog) NotesAfter(_ context.Context, after uint64) ([]LogNote, error) {
	var out []LogNote
	for _, n := range l.notes {
		if n.Size > after {
			out = append(out, n)
		}
	}
	return out, nil
}

func (l *memLog) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	return ConsistencyProof(ctx, l.nodes, from, to)
}

func (l *memLog) AddCosignature(_ context.Context, size uint64, _, line string) error {
	l.cosigs[size] = line
	return nil
}

func (l *memLog) LastCosigned(context.Context, string) (uint64, error) {
	var last uint64
	for s := range l.cosigs {
		last = max(last, s)
	}
	return last, nil
}

func startFakeWitness(t *testing.T, priv ed25519.PrivateKey) (*fakeWitness, Witness) {
	t.Helper()
	s, vkey := testWitness(t, "witness.test/fake")
	f := &fakeWitness{t: t, pub: priv.Public().(ed25519.PublicKey), signer: s}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	v, err := NewWitnessVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return f, Witness{URL: srv.URL, Verifier: v}
}

func TestSubmitterCosignsEveryCheckpoint(t *testing.T) {
	ctx := context.Background()
	priv := testKey(t)
	_, w := startFakeWitness(t, priv)
	log := newMemLog(t, priv)
	sub := NewSubmitter(log, []Witness{w}, nil, nil)
	log.grow(t, 5, 1)
	log.grow(t, 20, 1)
	if err := sub.Round(ctx); err != nil {
		t.Fatal(err)
	}
	log.grow(t, 100, 1)
	if err := sub.Round(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range log.notes {
		text, _, _ := SplitNote(n.Signed)
		lines, err := ParseSigLines([]byte(log.cosigs[n.Size]))
		if err != nil || len(Cosigners(text, lines, []note.Verifier{w.Verifier})) != 1 {
			t.Fatalf("checkpoint %d: cosignature %q", n.Size, log.cosigs[n.Size])
		}
	}
	if st := sub.Status()[0]; st.Cosigned != 125 || st.Refused || st.Refusals != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestSubmitterRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("ErrRewrite", func(t *testing.T) {
		priv := testKey(t)
		_, w := startFakeWitness(t, priv)
		honest := newMemLog(t, priv)
		honest.grow(t, 10, 1)
		if err := NewSubmitter(honest, []Witness{w}, nil, nil).Round(ctx); err != nil {
			t.Fatal(err)
		}
		// Same key, another history of a larger size, no cosignature kept:
		// the submitter learns the witness's size and proves from it.
		forged := newMemLog(t, priv)
		forged.grow(t, 12, 2)
		sub := NewSubmitter(forged, []Witness{w}, nil, nil)
		err := sub.Round(ctx)
		if !IsRefused(err) {
			t.Fatalf("Round = %v, want a refusal", err)
		}
		if st := sub.Status()[0]; !st.Refused || st.Refusals != 1 || !strings.Contains(st.LastError, "422") {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("ErrRollback", func(t *testing.T) {
		priv := testKey(t)
		_, w := startFakeWitness(t, priv)
		log := newMemLog(t, priv)
		log.grow(t, 10, 1)
		if err := NewSubmitter(log, []Witness{w}, nil, nil).Round(ctx); err != nil {
			t.Fatal(err)
		}
		older := newMemLog(t, priv)
		older.grow(t, 5, 1)
		if err := NewSubmitter(older, []Witness{w}, nil, nil).Round(ctx); !IsRefused(err) || !strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("Round = %v, want a refusal naming a rollback", err)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		_, w := startFakeWitness(t, testKey(t))
		log := newMemLog(t, testKey(t))
		log.grow(t, 3, 1)
		if err := NewSubmitter(log, []Witness{w}, nil, nil).Round(ctx); !IsRefused(err) || !strings.Contains(err.Error(), "403") {
			t.Fatalf("Round = %v, want a 403 refusal", err)
		}
	})
	t.Run("ErrBadCosignature", func(t *testing.T) {
		priv := testKey(t)
		f, w := startFakeWitness(t, priv)
		other, _ := testWitness(t, "witness.test/fake") // same name, another key
		f.signer = other
		log := newMemLog(t, priv)
		log.grow(t, 3, 1)
		sub := NewSubmitter(log, []Witness{w}, nil, nil)
		if err := sub.Round(ctx); err == nil || IsRefused(err) || !strings.Contains(err.Error(), "no valid cosignature") {
			t.Fatalf("Round = %v, want an answer without a valid cosignature", err)
		}
		if st := sub.Status()[0]; st.Failures != 1 || st.Refused || len(log.cosigs) != 0 {
			t.Fatalf("status %+v, cosignatures %v", st, log.cosigs)
		}
	})
	t.Run("ErrUnreachable", func(t *testing.T) {
		priv := testKey(t)
		_, w := startFakeWitness(t, priv)
		w.URL = "http://127.0.0.1:1"
		log := newMemLog(t, priv)
		log.grow(t, 3, 1)
		sub := NewSubmitter(log, []Witness{w}, nil, nil)
		if err := sub.Round(ctx); err == nil || IsRefused(err) {
			t.Fatalf("Round = %v, want a failure that is no refusal", err)
		}
		if st := sub.Status()[0]; st.Failures != 1 || st.Refused {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("ErrServerError", func(t *testing.T) {
		priv := testKey(t)
		f, w := startFakeWitness(t, priv)
		f.answer = func(w http.ResponseWriter) bool { http.Error(w, "boom", http.StatusInternalServerError); return true }
		log := newMemLog(t, priv)
		log.grow(t, 3, 1)
		if err := NewSubmitter(log, []Witness{w}, nil, nil).Round(ctx); err == nil || IsRefused(err) || !strings.Contains(err.Error(), "500") {
			t.Fatalf("Round = %v", err)
		}
	})
}
