package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/upstream"
)

// OpenTokens returns a new, empty token store that the test owns and
// closes.
type OpenTokens func(t *testing.T) upstream.TokenStore

// RunTokens runs the conformance suite of upstream.TokenStore, each case
// on a store of its own: sealed tokens come back byte for byte, one per
// upstream, the last one kept winning.
func RunTokens(t *testing.T, open OpenTokens) {
	cases := []struct {
		name string
		fn   func(*testing.T, upstream.TokenStore)
	}{
		{"MissingIsNotFound", testTokenMissing},
		{"KeptByteForByte", testTokenBytes},
		{"ReplacedPerUpstream", testTokenReplaced},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

func testTokenMissing(t *testing.T, s upstream.TokenStore) {
	if _, err := s.UpstreamToken(context.Background(), "docs"); kind(err) != custody.ENOTFOUND {
		t.Fatalf("UpstreamToken of none: %v, want ENOTFOUND", err)
	}
}

// testTokenBytes keeps bytes no text column would: NULs, bytes that are
// no UTF-8. The caller's slice changed afterwards changes nothing kept.
func testTokenBytes(t *testing.T, s upstream.TokenStore) {
	ctx := context.Background()
	sealed := []byte{1, 0, 0xff, 0xfe, 'x', 0, 0x80}
	want := bytes.Clone(sealed)
	if err := s.PutUpstreamToken(ctx, "docs", sealed); err != nil {
		t.Fatal(err)
	}
	sealed[0] = 9
	got, err := s.UpstreamToken(ctx, "docs")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("UpstreamToken = %x, %v; want %x", got, err, want)
	}
}

func testTokenReplaced(t *testing.T, s upstream.TokenStore) {
	ctx := context.Background()
	for _, put := range []struct{ name, sealed string }{{"docs", "a1"}, {"wiki", "b1"}, {"docs", "a2"}} {
		if err := s.PutUpstreamToken(ctx, put.name, []byte(put.sealed)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"docs": "a2", "wiki": "b1"} {
		if got, err := s.UpstreamToken(ctx, name); err != nil || string(got) != want {
			t.Errorf("UpstreamToken(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
}
