package ledger

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// stream is a ledger as a Verifier is fed it: entries and checkpoints in
// order.
type stream struct {
	lines []Line
	pub   ed25519.PublicKey
}

// fixtureStream returns the fixture chain with signed checkpoints after
// entry 3 and after the last entry.
func fixtureStream(t testing.TB) *stream {
	entries := fixtureEntries(t)
	s := &stream{pub: testKey().Public().(ed25519.PublicKey)}
	for i := range entries {
		e := &entries[i]
		s.lines = append(s.lines, Line{Entry: e})
		if e.Seq == 3 || i == len(entries)-1 {
			s.lines = append(s.lines, Line{Checkpoint: s.sign(e.Seq, e.Hash)})
		}
	}
	return s
}

func (s *stream) sign(size int64, head string) *custody.Checkpoint {
	cp := SignCheckpoint(testKey(), size, head, "2026-03-01T12:01:00.000000Z")
	return &cp
}

// entry returns the entry at seq.
func (s *stream) entry(seq int64) *custody.Entry {
	for _, l := range s.lines {
		if l.Entry != nil && l.Entry.Seq == seq {
			return l.Entry
		}
	}
	panic("no such entry")
}

// index returns the position of the entry at seq in the stream.
func (s *stream) index(seq int64) int {
	return slices.IndexFunc(s.lines, func(l Line) bool { return l.Entry != nil && l.Entry.Seq == seq })
}

// entries returns the entries of the stream, in order.
func (s *stream) entries() []*custody.Entry {
	var es []*custody.Entry
	for _, l := range s.lines {
		if l.Entry != nil {
			es = append(es, l.Entry)
		}
	}
	return es
}

// reseal recomputes the chain from the entry at index i of the stream on,
// as an attacker with write access to the store would.
func (s *stream) reseal(t testing.TB, from int64) {
	t.Helper()
	for _, e := range s.entries() {
		if e.Seq < from {
			continue
		}
		prev := ""
		if e.Seq > 1 {
			prev = s.entry(e.Seq - 1).Hash
		}
		if err := Seal(prev, e); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *stream) verify() (Report, error) {
	v := NewVerifier(s.pub)
	for _, l := range s.lines {
		var err error
		if l.Entry != nil {
			err = v.Entry(l.Entry)
		} else {
			err = v.Checkpoint(*l.Checkpoint)
		}
		if err != nil {
			if _, ferr := v.Finish(); ferr != err {
				return Report{}, errors.New("Finish did not repeat the first error")
			}
			return Report{}, err
		}
	}
	return v.Finish()
}

// verifyBatched verifies like verify, handing runs of entries to
// Verifier.Entries.
func (s *stream) verifyBatched() (Report, error) {
	v := NewVerifier(s.pub)
	var batch []custody.Entry
	flush := func() error {
		err := v.Entries(batch)
		batch = batch[:0]
		return err
	}
	for _, l := range s.lines {
		if l.Entry != nil {
			batch = append(batch, *l.Entry)
			continue
		}
		if err := flush(); err != nil {
			return Report{}, err
		}
		if err := v.Checkpoint(*l.Checkpoint); err != nil {
			return Report{}, err
		}
	}
	if err := flush(); err != nil {
		return Report{}, err
	}
	return v.Finish()
}

func TestVerifierTampering(t *testing.T) {
	otherKey := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	tests := []struct {
		name   string
		tamper func(t *testing.T, s *stream)
		seq    int64
		reason string
	}{
		{"BodyByte", func(t *testing.T, s *stream) {
			s.entry(3).Body[2] ^= 1
		}, 3, "body_sha256 does not match the body bytes"},
		{"BodyWhitespace", func(t *testing.T, s *stream) {
			e := s.entry(2)
			e.Body = e.Body[:len(e.Body)-1]
		}, 2, "body_sha256 does not match the body bytes"},
		{"BodySHA256", func(t *testing.T, s *stream) {
			s.entry(3).BodySHA256 = strings.Repeat("ab", 32)
		}, 3, "body_sha256 does not match the body bytes"},
		{"BodyAndBodySHA256", func(t *testing.T, s *stream) {
			e := s.entry(3)
			e.Body = []byte(`{"reason":"forged"}`)
			e.BodySHA256 = bodySHA256(e.Body)
		}, 3, "hash does not match the entry's contents"},
		{"Kind", func(t *testing.T, s *stream) {
			s.entry(4).Kind = custody.KindApprovalExpired
		}, 4, "hash does not match the entry's contents"},
		{"Actor", func(t *testing.T, s *stream) {
			s.entry(1).Actor = "cli"
		}, 1, "hash does not match the entry's contents"},
		{"Trace", func(t *testing.T, s *stream) {
			s.entry(5).Trace = "tr-z"
		}, 5, "hash does not match the entry's contents"},
		{"At", func(t *testing.T, s *stream) {
			s.entry(5).At = "2026-03-01T12:00:04.000001Z"
		}, 5, "hash does not match the entry's contents"},
		{"RefChanged", func(t *testing.T, s *stream) {
			s.entry(2).Refs["vms_update_id"] = "u-0002"
		}, 2, "hash does not match the entry's contents"},
		{"RefAdded", func(t *testing.T, s *stream) {
			s.entry(3).Refs["approval_request_id"] = "a-1"
		}, 3, "hash does not match the entry's contents"},
		{"RefRemoved", func(t *testing.T, s *stream) {
			delete(s.entry(4).Refs, "brief_id")
		}, 4, "hash does not match the entry's contents"},
		{"HashField", func(t *testing.T, s *stream) {
			s.entry(6).Hash = strings.Repeat("0", 64)
		}, 6, "hash does not match the entry's contents"},
		{"GenesisPrev", func(t *testing.T, s *stream) {
			s.entry(1).Prev = strings.Repeat("1", 64)
		}, 1, "prev is not the genesis value"},
		{"Reordered", func(t *testing.T, s *stream) {
			i, j := s.index(5), s.index(6)
			s.lines[i], s.lines[j] = s.lines[j], s.lines[i]
		}, 5, "missing: the next entry has seq 6"},
		{"ReorderedRenumbered", func(t *testing.T, s *stream) {
			e5, e6 := s.entry(5), s.entry(6)
			*e5, *e6 = *e6, *e5
			e5.Seq, e6.Seq = 5, 6
		}, 5, "prev does not match the hash of seq 4"},
		{"Duplicated", func(t *testing.T, s *stream) {
			s.lines = slices.Insert(s.lines, s.index(5), s.lines[s.index(4)])
		}, 5, "out of order: the next entry has seq 4"},
		{"DeletedMiddle", func(t *testing.T, s *stream) {
			s.lines = slices.Delete(s.lines, s.index(5), s.index(5)+1)
		}, 5, "missing: the next entry has seq 6"},
		{"DeletedMiddleRenumbered", func(t *testing.T, s *stream) {
			s.lines = slices.Delete(s.lines, s.index(5), s.index(5)+1)
			for _, e := range s.entries() {
				if e.Seq > 5 {
					e.Seq--
				}
			}
		}, 5, "prev does not match the hash of seq 4"},
		{"RewrittenTail", func(t *testing.T, s *stream) {
			s.entry(6).Body = []byte(`{"status":"cancelled"}`)
			s.reseal(t, 6)
		}, 8, "hash does not match the head of the checkpoint at size 8"},
		{"RewrittenWholeChain", func(t *testing.T, s *stream) {
			s.entry(2).Actor = "someone else"
			s.reseal(t, 1)
		}, 3, "hash does not match the head of the checkpoint at size 3"},
		{"TruncatedTail", func(t *testing.T, s *stream) {
			s.lines = slices.DeleteFunc(s.lines, func(l Line) bool { return l.Entry != nil && l.Entry.Seq > 6 })
		}, 7, "missing: a checkpoint covers 8 entries but the ledger ends at seq 6"},
		{"TruncatedTailCheckpointFirst", func(t *testing.T, s *stream) {
			cp := s.lines[len(s.lines)-1]
			s.lines = slices.DeleteFunc(s.lines, func(l Line) bool { return l.Entry != nil && l.Entry.Seq > 5 })
			s.lines = slices.Insert(s.lines, 0, cp)
		}, 6, "missing: a checkpoint covers 8 entries but the ledger ends at seq 5"},
		{"ForgedSignature", func(t *testing.T, s *stream) {
			cp := s.lines[s.index(3)+1].Checkpoint
			sig := []byte(cp.Sig)
			sig[10] ^= 0x01
			cp.Sig = string(sig)
		}, 3, "signature does not verify"},
		{"CheckpointSizeChanged", func(t *testing.T, s *stream) {
			s.lines[s.index(3)+1].Checkpoint.Size = 2
		}, 2, "signature does not verify"},
		{"CheckpointHeadMismatch", func(t *testing.T, s *stream) {
			s.lines[s.index(3)+1] = Line{Checkpoint: s.sign(3, s.entry(2).Hash)}
		}, 3, "hash does not match the head of the checkpoint at size 3"},
		{"CheckpointHeadMismatchGivenFirst", func(t *testing.T, s *stream) {
			s.lines = slices.Insert(s.lines, 0, Line{Checkpoint: s.sign(4, s.entry(2).Hash)})
		}, 4, "hash does not match the head of the checkpoint at size 4"},
		{"ConflictingCheckpoints", func(t *testing.T, s *stream) {
			s.lines = slices.Insert(s.lines, 0, Line{Checkpoint: s.sign(4, s.entry(4).Hash)}, Line{Checkpoint: s.sign(4, s.entry(3).Hash)})
		}, 4, "two checkpoints at size 4 name different heads"},
		{"CheckpointSizeZeroNotGenesis", func(t *testing.T, s *stream) {
			s.lines = slices.Insert(s.lines, 0, Line{Checkpoint: s.sign(0, s.entry(1).Hash)})
		}, 0, "does not name the genesis value"},
		{"WrongKey", func(t *testing.T, s *stream) {
			s.pub = otherKey.Public().(ed25519.PublicKey)
		}, 3, "signature does not verify with this key"},
		{"WrongKeyUnsignedStillChecksHeads", func(t *testing.T, s *stream) {
			s.pub = nil
			s.lines[s.index(3)+1] = Line{Checkpoint: s.sign(3, s.entry(2).Hash)}
		}, 3, "hash does not match the head of the checkpoint at size 3"},
		{"MalformedHeadUnsigned", func(t *testing.T, s *stream) {
			s.pub = nil
			s.lines[s.index(3)+1].Checkpoint.Head = strings.ToUpper(s.entry(3).Hash)
		}, 3, "not 64 lowercase hex digits"},
		{"SeqZero", func(t *testing.T, s *stream) {
			s.entry(1).Seq = 0
		}, 1, "out of order: the next entry has seq 0"},
		{"BodyNotJSON", func(t *testing.T, s *stream) {
			e := s.entry(7)
			e.Body = []byte(`{"a":1,"a":2}`)
			e.BodySHA256 = bodySHA256(e.Body)
		}, 7, `cannot hash the entry: body at byte 7: duplicate key "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fixtureStream(t)
			tt.tamper(t, s)
			_, err := s.verify()
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("verify error = %v, want a *VerifyError", err)
			}
			if ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("verify error = %q, want seq %d and %q", err, tt.seq, tt.reason)
			}
			if _, berr := s.verifyBatched(); berr == nil || berr.Error() != err.Error() {
				t.Errorf("batched verify error = %v, want %v", berr, err)
			}
		})
	}
}

func TestVerifierAccepts(t *testing.T) {
	tests := []struct {
		name    string
		arrange func(s *stream)
		report  Report
		summary string
	}{
		{"Interleaved", func(s *stream) {}, Report{Entries: 8, Checkpoints: 2, Covered: 8, Signed: true}, "ok: 8 entries, head e7a7f130e6f0…, 2 signed checkpoints"},
		{"CheckpointsFirst", func(s *stream) {
			slices.SortStableFunc(s.lines, func(a, b Line) int {
				return boolInt(a.Checkpoint == nil) - boolInt(b.Checkpoint == nil)
			})
		}, Report{Entries: 8, Checkpoints: 2, Covered: 8, Signed: true}, ""},
		{"CheckpointsLast", func(s *stream) {
			slices.SortStableFunc(s.lines, func(a, b Line) int {
				return boolInt(a.Checkpoint != nil) - boolInt(b.Checkpoint != nil)
			})
		}, Report{Entries: 8, Checkpoints: 2, Covered: 8, Signed: true}, ""},
		{"RepeatedCheckpoint", func(s *stream) {
			s.lines = append(s.lines, s.lines[s.index(3)+1])
		}, Report{Entries: 8, Checkpoints: 3, Covered: 8, Signed: true}, ""},
		{"GenesisCheckpoint", func(s *stream) {
			s.lines = slices.Insert(s.lines, 0, Line{Checkpoint: s.sign(0, GenesisPrev())})
		}, Report{Entries: 8, Checkpoints: 3, Covered: 8, Signed: true}, ""},
		{"NoKey", func(s *stream) { s.pub = nil },
			Report{Entries: 8, Checkpoints: 2, Covered: 8, Signed: false}, "ok: 8 entries, head e7a7f130e6f0…, 2 checkpoints (signatures not checked: no public key)"},
		{"NoCheckpoints", func(s *stream) {
			s.lines = slices.DeleteFunc(s.lines, func(l Line) bool { return l.Checkpoint != nil })
		}, Report{Entries: 8, Checkpoints: 0, Signed: true}, "ok: 8 entries, head e7a7f130e6f0…, no checkpoints (a cut-off tail would go unnoticed)"},
		{"TailBeyondLastCheckpoint", func(s *stream) {
			s.lines = s.lines[:len(s.lines)-1]
		}, Report{Entries: 8, Checkpoints: 1, Covered: 3, Signed: true}, "ok: 8 entries, head e7a7f130e6f0…, 1 signed checkpoint; seq 4 on not yet checkpointed"},
		{"Empty", func(s *stream) { s.lines = nil }, Report{Signed: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fixtureStream(t)
			tt.arrange(s)
			r, err := s.verify()
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if r.Entries > 0 {
				tt.report.Head = s.entry(r.Entries).Hash
			}
			if r != tt.report {
				t.Errorf("report = %+v, want %+v", r, tt.report)
			}
			if tt.summary != "" && r.String() != tt.summary {
				t.Errorf("String() = %q, want %q", r.String(), tt.summary)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestVerifierManyEntries crosses the chunk boundary of the kept hashes
// and checks a checkpoint given long after its entry.
func TestVerifierManyEntries(t *testing.T) {
	const n = hashChunk + 10
	v := NewVerifier(testKey().Public().(ed25519.PublicKey))
	prev := ""
	heads := map[int64]string{}
	for seq := int64(1); seq <= n; seq++ {
		e := custody.Entry{Seq: seq, At: "2026-03-01T12:00:00.000000Z", Kind: "k", Body: []byte(`{"n":1}`)}
		if err := Seal(prev, &e); err != nil {
			t.Fatal(err)
		}
		if err := v.Entry(&e); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
		if seq == 1 || seq == hashChunk || seq == hashChunk+1 || seq == n {
			heads[seq] = e.Hash
		}
	}
	for size, head := range heads {
		if err := v.Checkpoint(SignCheckpoint(testKey(), size, head, "t")); err != nil {
			t.Fatalf("checkpoint at %d: %v", size, err)
		}
	}
	if err := v.Checkpoint(SignCheckpoint(testKey(), hashChunk+1, heads[hashChunk], "t")); err == nil {
		t.Fatal("a checkpoint naming the wrong head across a chunk boundary verified")
	}
}

func TestVerifyErrorMessage(t *testing.T) {
	err := &VerifyError{Seq: 17, Reason: "prev does not match the hash of seq 16"}
	if got, want := err.Error(), "seq 17: prev does not match the hash of seq 16"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
