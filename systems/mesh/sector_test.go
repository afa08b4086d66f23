package mesh

import (
	"math/rand/v2"
	"testing"
)

// sectorCases are MGRS strings around the edges of the pattern, where a
// fast sector could part from the regular expression.
var sectorCases = []string{
	"", " ", "1", "11", "11S", "11SK", "11SKU", "11SKU1234567890", "11S KU 12345 67890",
	"1SKU", "1 S K U", "  11sku", "11sKu", "111SKU", "011SKU", "0SKU", "11IKU", "11OKU",
	"11SIU", "11SKO", "11AKU", "11BKU", "11YKU", "11ZKU", "11XZZ", "11CAA", "9XAA",
	"11S\tKU", "11-SKU", "S11KU", "11SK", "1SK", "11S KU", "11SK\u00e9", "11SKU\u00e9",
	"11\u017fKU", "11S\u0131U", "11\u212aKU", "\u00e911SKU", "11SK\xff", "11S\xffKU", "\xff",
	"１１SKU", "11ＳKU", "11SKU\x00", "\x0011SKU",
}

// TestSectorMatchesRegexp checks sector, which reads ASCII without the
// regular expression, against the regular expression that defines it.
func TestSectorMatchesRegexp(t *testing.T) {
	for _, s := range sectorCases {
		if got, want := sector(s), regexpSector(s); got != want {
			t.Errorf("Sector(%q) = %q, want %q", s, got, want)
		}
	}
	alphabet := []byte("0123456789 AHIJNOPXYZahijnopxyz\t-.\xc5\xbf\xc4\xb1\xff")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, rng.IntN(9))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if got, want := sector(string(b)), regexpSector(string(b)); got != want {
			t.Fatalf("Sector(%q) = %q, want %q", b, got, want)
		}
	}
}

// FuzzSector compares sector with the regular expression on any string.
func FuzzSector(f *testing.F) {
	for _, s := range sectorCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := sector(s), regexpSector(s); got != want {
			t.Fatalf("Sector(%q) = %q, want %q", s, got, want)
		}
	})
}
