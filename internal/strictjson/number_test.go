package strictjson

import (
	"strconv"
	"strings"
	"testing"
)

// TestNumberRules checks each number rule at its boundary, and what
// Number returns for a literal it accepts.
func TestNumberRules(t *testing.T) {
	tests := []struct {
		lit   string
		isInt bool
		float float64
		err   string // "" when accepted
	}{
		{lit: "0", isInt: true},
		{lit: "-0", isInt: true},
		{lit: "9007199254740992", isInt: true},
		{lit: "-9007199254740992", isInt: true},
		{lit: "999999999999999", isInt: true},
		{lit: "9007199254740993", err: "integer 9007199254740993 beyond ±2^53"},
		{lit: "-9007199254740993", err: "beyond ±2^53"},
		{lit: "100000000000000000000", err: "beyond ±2^53"},
		{lit: "99999999999999999999999999999", err: "beyond ±2^53"},
		{lit: "2.5", float: 2.5},
		{lit: "-0.0", float: 0},
		{lit: "1E30", float: 1e30},
		{lit: "1e21", float: 1e21},
		{lit: "9007199254740992.0", float: 9007199254740992},
		{lit: "9007199254740994.0", err: "integer beyond ±2^53"},
		{lit: "1e20", err: "integer beyond ±2^53"},
		{lit: "-1e16", err: "integer beyond ±2^53"},
		{lit: "1.5e300", float: 1.5e300},
		{lit: "1e400", err: "beyond the range of a double"},
		{lit: "-1e309", err: "beyond the range of a double"},
		{lit: "1e-400", float: 0},
		{lit: "1e9999", err: "beyond the range of a double"},
		{lit: "0e00009999", float: 0},
		{lit: "1e10000", err: "exponent out of range"},
		{lit: "0E-000010000", err: "exponent out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			d := Reader{In: []byte(tt.lit)}
			n, err := d.Number()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Number(%s) = %+v, %v; want refused with %q", tt.lit, n, err, tt.err)
				}
				if se := err.(*SyntaxError); se.Offset != 0 || d.Pos != 0 {
					t.Errorf("refusal at byte %d, reader at %d; want both at the literal's start", se.Offset, d.Pos)
				}
				return
			}
			if err != nil || string(n.Lit) != tt.lit || n.Int != tt.isInt || n.Float != tt.float {
				t.Fatalf("Number(%s) = %q int=%v float=%v, %v; want int=%v float=%v", tt.lit, n.Lit, n.Int, n.Float, err, tt.isInt, tt.float)
			}
			if d.Pos != len(tt.lit) {
				t.Errorf("reader at %d, want %d", d.Pos, len(tt.lit))
			}
		})
	}
}

// TestNumberIntegerBoundary walks the integers around ±2^53, where a
// double starts to skip integers.
func TestNumberIntegerBoundary(t *testing.T) {
	for n := int64(MaxSafeInteger - 3); n <= MaxSafeInteger+5; n++ {
		for _, v := range []int64{n, -n} {
			lit := strconv.FormatInt(v, 10)
			_, err := (&Reader{In: []byte(lit)}).Number()
			if ok := v >= -MaxSafeInteger && v <= MaxSafeInteger; ok != (err == nil) {
				t.Errorf("Number(%s) error = %v, want accepted = %v", lit, err, ok)
			}
		}
	}
}

// TestSkipNumberSyntaxOnly checks that SkipNumber, for readers that only
// look for a value's end, checks the spelling and none of the rules.
func TestSkipNumberSyntaxOnly(t *testing.T) {
	for _, lit := range []string{"9007199254740993", "1e400", "1e10000", "1e20"} {
		d := Reader{In: []byte(lit)}
		if err := d.SkipNumber(); err != nil || d.Pos != len(lit) {
			t.Errorf("SkipNumber(%s) = %v at %d", lit, err, d.Pos)
		}
	}
	for _, lit := range []string{"", "-", "1.", "1e", "1e+", "x"} {
		if err := (&Reader{In: []byte(lit)}).SkipNumber(); err == nil {
			t.Errorf("SkipNumber(%s) accepted a malformed number", lit)
		}
	}
}
