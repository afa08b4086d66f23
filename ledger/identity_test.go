package ledger

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

const testLedgerID = "0123456789abcdef0123456789abcdef"

func otherKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x17}, ed25519.SeedSize))
}

// chainOf seals entries with the given kinds and bodies.
func chainOf(t *testing.T, bodies ...[2]string) []custody.Entry {
	t.Helper()
	var es []custody.Entry
	prev := ""
	for i, kb := range bodies {
		e := custody.Entry{Seq: int64(i + 1), At: "2026-03-01T12:00:00.000000Z", Kind: kb[0], Body: []byte(kb[1])}
		if err := Seal(prev, &e); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
		es = append(es, e)
	}
	return es
}

func TestLedgerCheckpointMessage(t *testing.T) {
	got := string(LedgerCheckpointMessage(testLedgerID, 7, strings.Repeat("ab", 32), "t"))
	want := "custody-checkpoint/v2\n" + testLedgerID + "\n7\n" + strings.Repeat("ab", 32) + "\nt\n"
	if got != want {
		t.Errorf("LedgerCheckpointMessage = %q, want %q", got, want)
	}
}

// TestCheckpointLedgerID checks that a checkpoint's signature commits to
// its ledger id, that a checkpoint without one (version 1) still
// verifies, and that one ledger's checkpoints never mix with another's.
func TestCheckpointLedgerID(t *testing.T) {
	pub := testKey().Public().(ed25519.PublicKey)
	head := strings.Repeat("cd", 32)
	cp := SignLedgerCheckpoint(testKey(), testLedgerID, 3, head, "t")
	if err := VerifyCheckpoint(pub, cp); err != nil {
		t.Fatalf("v2 checkpoint: %v", err)
	}
	if err := VerifyCheckpoint(pub, SignCheckpoint(testKey(), 3, head, "t")); err != nil {
		t.Fatalf("v1 checkpoint: %v", err)
	}
	moved := cp
	moved.Ledger = strings.Replace(testLedgerID, "0", "1", 1)
	if err := VerifyCheckpoint(pub, moved); err == nil {
		t.Error("a checkpoint moved to another ledger id verified")
	}
	stripped := cp
	stripped.Ledger = ""
	if err := VerifyCheckpoint(pub, stripped); err == nil {
		t.Error("a v2 checkpoint stripped of its ledger id verified as v1")
	}
	bad := SignLedgerCheckpoint(testKey(), "NOT-AN-ID\n", 3, head, "t")
	if err := VerifyCheckpoint(pub, bad); err == nil || !strings.Contains(err.Error(), "ledger id") {
		t.Errorf("malformed ledger id: err = %v", err)
	}
	line := AppendCheckpointLine(nil, cp)
	if !strings.Contains(string(line), `"ledger":"`+testLedgerID+`"`) {
		t.Errorf("checkpoint line %s does not name the ledger", line)
	}
	l, err := NewDecoder(bytes.NewReader(line)).Next()
	if err != nil || l.Checkpoint == nil || *l.Checkpoint != cp {
		t.Errorf("decoded %+v, %v; want %+v", l.Checkpoint, err, cp)
	}
}

func TestVerifierRefusesMixedLedgers(t *testing.T) {
	es := chainOf(t, [2]string{"k", `{}`}, [2]string{"k", `{}`})
	v := NewVerifier(testKey().Public().(ed25519.PublicKey))
	other := strings.Repeat("e", 32)
	for i := range es {
		id := testLedgerID
		if i == 1 {
			id = other
		}
		if err := v.Entry(&es[i]); err != nil {
			t.Fatal(err)
		}
		err := v.Checkpoint(SignLedgerCheckpoint(testKey(), id, es[i].Seq, es[i].Hash, "t"))
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 && (err == nil || !strings.Contains(err.Error(), "of ledger "+other)) {
			t.Fatalf("checkpoint of another ledger: err = %v", err)
		}
	}
}

// TestVerifierKeyRotation verifies a ledger whose key was rotated: the
// checkpoints before the rotation with the old key, those after it with
// the new one, both keys trusted.
func TestVerifierKeyRotation(t *testing.T) {
	oldPub := testKey().Public().(ed25519.PublicKey)
	newPub := otherKey().Public().(ed25519.PublicKey)
	es := chainOf(t, [2]string{"k", `{}`}, [2]string{"k", `{}`},
		[2]string{KeyRotatedKind, string(KeyRotationBody(oldPub, newPub))}, [2]string{"k", `{}`})
	sign := func(k ed25519.PrivateKey, seq int64) custody.Checkpoint {
		return SignLedgerCheckpoint(k, testLedgerID, seq, es[seq-1].Hash, "t")
	}
	run := func(v *Verifier, cps map[int64]custody.Checkpoint) (Report, error) {
		for i := range es {
			if err := v.Entry(&es[i]); err != nil {
				return Report{}, err
			}
			if cp, ok := cps[es[i].Seq]; ok {
				if err := v.Checkpoint(cp); err != nil {
					return Report{}, err
				}
			}
		}
		return v.Finish()
	}
	good := map[int64]custody.Checkpoint{2: sign(testKey(), 2), 3: sign(otherKey(), 3), 4: sign(otherKey(), 4)}
	r, err := run(NewStreamVerifier(oldPub, newPub), good)
	if err != nil || r.Rotations != 1 || r.Covered != 4 || r.Ledger != testLedgerID {
		t.Fatalf("rotated ledger: %+v, %v", r, err)
	}
	tests := []struct {
		name   string
		keys   []ed25519.PublicKey
		cps    map[int64]custody.Checkpoint
		seq    int64
		reason string
	}{
		{"NewKeyNotTrusted", []ed25519.PublicKey{oldPub}, good, 3, "not a trusted key"},
		{"OldKeyAfterRotation", []ed25519.PublicKey{oldPub, newPub},
			map[int64]custody.Checkpoint{2: sign(testKey(), 2), 4: sign(testKey(), 4)}, 4, "key in force from seq 3"},
		{"NewKeyBeforeRotation", []ed25519.PublicKey{oldPub, newPub},
			map[int64]custody.Checkpoint{2: sign(otherKey(), 2), 4: sign(otherKey(), 4)}, 3, "names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(NewStreamVerifier(tt.keys...), tt.cps)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.reason) {
				t.Fatalf("err = %v, want seq %d and %q", err, tt.seq, tt.reason)
			}
		})
	}
}

func TestStreamVerifierRefusesLateCheckpoint(t *testing.T) {
	es := chainOf(t, [2]string{"k", `{}`}, [2]string{"k", `{}`})
	v := NewStreamVerifier(testKey().Public().(ed25519.PublicKey))
	if err := v.Entries(es); err != nil {
		t.Fatal(err)
	}
	err := v.Checkpoint(SignLedgerCheckpoint(testKey(), testLedgerID, 1, es[0].Hash, "t"))
	if err == nil || !strings.Contains(err.Error(), "must follow the entry") {
		t.Fatalf("late checkpoint: err = %v", err)
	}
}

func TestReportStrict(t *testing.T) {
	tests := []struct {
		name   string
		r      Report
		seq    int64
		reason string
	}{
		{"Covered", Report{Entries: 5, Covered: 5, Checkpoints: 1}, 0, ""},
		{"Empty", Report{}, 0, ""},
		{"Tail", Report{Entries: 5, Covered: 3, Checkpoints: 1}, 4, "last 2 entries (seq 4 to 5) are not covered"},
		{"NoCheckpoints", Report{Entries: 5}, 1, "no checkpoint covers any of the 5 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Strict()
			if tt.seq == 0 {
				if err != nil {
					t.Fatalf("Strict() = %v", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.reason) {
				t.Fatalf("Strict() = %v, want seq %d and %q", err, tt.seq, tt.reason)
			}
		})
	}
}
