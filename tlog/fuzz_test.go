package tlog

import (
	"bytes"
	"testing"
)

// FuzzParseText checks that a checkpoint text that parses is one Text
// writes back byte for byte: no two texts mean the same checkpoint.
func FuzzParseText(f *testing.F) {
	f.Add(testCheckpoint(testKey(f)).Text())
	f.Add([]byte("o\n1\nAAAA\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ParseText(text)
		if err != nil {
			return
		}
		if again := c.Text(); !bytes.Equal(again, text) {
			t.Fatalf("parsed %q, writes back %q", text, again)
		}
	})
}

// FuzzSigLines checks that parsed signature lines are the input, line by
// line.
func FuzzSigLines(f *testing.F) {
	msg, err := Sign(testCheckpoint(testKey(f)), testKey(f))
	if err != nil {
		f.Fatal(err)
	}
	_, sigs, _ := SplitNote(msg)
	f.Add(sigs)
	f.Add([]byte("— a AAAAAAA=\n— b\n"))
	f.Fuzz(func(t *testing.T, sigs []byte) {
		lines, err := ParseSigLines(sigs)
		if err != nil {
			return
		}
		var joined []byte
		for _, l := range lines {
			joined = append(joined, l.Line...)
		}
		if !bytes.Equal(joined, sigs) {
			t.Fatalf("lines %q from %q", joined, sigs)
		}
	})
}
