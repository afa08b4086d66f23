package ledger

import (
	"crypto/ed25519"
	"errors"
	"testing"
)

// TestPager feeds a chain longer than two pages, with checkpoints inside
// pages and at their edges, and finds what the verifier finds.
func TestPager(t *testing.T) {
	entries := benchChain(&testing.B{}, 2*PageSize+17)
	pub := testKey().Public().(ed25519.PublicKey)
	cps := map[int64]bool{1: true, 700: true, PageSize: true, PageSize + 1: true, int64(len(entries)): true}
	feed := func(tamper int64) (Report, error) {
		p := NewPager(NewVerifier(pub))
		for i := range entries {
			e := entries[i]
			if e.Seq == tamper {
				e.Actor = "someone else"
			}
			if err := p.Entry(&e); err != nil {
				return Report{}, err
			}
			if cps[e.Seq] {
				if err := p.Checkpoint(SignCheckpoint(testKey(), e.Seq, entries[i].Hash, "t")); err != nil {
					return Report{}, err
				}
			}
		}
		return p.Finish()
	}
	r, err := feed(0)
	if err != nil || r.Entries != int64(len(entries)) || r.Checkpoints != len(cps) {
		t.Fatalf("clean chain: %+v, %v", r, err)
	}
	var ve *VerifyError
	if _, err := feed(PageSize + 5); !errors.As(err, &ve) || ve.Seq != PageSize+5 {
		t.Fatalf("tampered entry: %v, want a VerifyError at %d", err, PageSize+5)
	}
}
