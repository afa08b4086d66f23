package tlog

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// sigPrefix opens every signature line of a note.
const sigPrefix = "\u2014 "

// NewWitnessVerifier returns the verifier of a witness's cosignatures
// (C2SP tlog-cosignature, cosignature/v1) from its verifier key, as a
// witness prints it (litewitness logs it at start as "vkey"). A plain
// ed25519 key (type 0x01) is taken as the same key signing cosignatures.
func NewWitnessVerifier(vkey string) (note.Verifier, error) {
	v, err := fnote.NewVerifierForCosignatureV1(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("witness key %q: %w", vkey, err)
	}
	return v, nil
}

// SigLine is one signature line of a note: the signer's name, its key
// hash and the signature.
type SigLine struct {
	Name string
	Hash uint32
	Sig  []byte
	Line string // as written, with its newline
}

// ParseSigLines reads the signature lines of a note, each "— name
// base64(keyhash ‖ sig)\n".
func ParseSigLines(sigs []byte) ([]SigLine, error) {
	var out []SigLine
	for len(sigs) > 0 {
		line, rest, ok := bytes.Cut(sigs, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("signature line %q has no newline", line)
		}
		sigs = rest
		s, err := parseSigLine(string(line))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseSigLine(line string) (SigLine, error) {
	body, ok := strings.CutPrefix(line, sigPrefix)
	name, b64, ok2 := strings.Cut(body, " ")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || !ok2 || name == "" || err != nil || len(raw) < 5 {
		return SigLine{}, fmt.Errorf("malformed signature line %q", line)
	}
	return SigLine{Name: name, Hash: binary.BigEndian.Uint32(raw), Sig: raw[4:], Line: line + "\n"}, nil
}

// Cosigners returns the names of the witnesses among ws whose cosignature
// on text is among sigs and verifies. A signature line that claims a
// witness's key but does not verify is skipped, not an error: it is
// exactly what a rewritten checkpoint carries.
func Cosigners(text []byte, sigs []SigLine, ws []note.Verifier) []string {
	var names []string
	for _, w := range ws {
		for _, s := range sigs {
			if s.Name == w.Name() && s.Hash == w.KeyHash() && w.Verify(text, s.Sig) {
				names = append(names, w.Name())
				break
			}
		}
	}
	return names
}

// CosignatureFor returns the signature line among sigs that w made, and
// whether it verifies on text.
func CosignatureFor(text []byte, sigs []SigLine, w note.Verifier) (SigLine, bool) {
	for _, s := range sigs {
		if s.Name == w.Name() && s.Hash == w.KeyHash() && w.Verify(text, s.Sig) {
			return s, true
		}
	}
	return SigLine{}, false
}

// CosignatureError says that a witness's cosignature on a checkpoint is
// missing, or is there and does not verify.
type CosignatureError struct {
	Witness string
	// Forged is set when a signature line carries the witness's name and
	// key hash but does not verify on the checkpoint.
	Forged bool
}

func (e *CosignatureError) Error() string {
	if e.Forged {
		return fmt.Sprintf("the cosignature of witness %s does not verify on the checkpoint (forged, or of another checkpoint)", e.Witness)
	}
	return fmt.Sprintf("the checkpoint carries no cosignature by witness %s", e.Witness)
}

// CheckCosignatures checks that every witness in ws cosigned text, a
// checkpoint's note text whose signature lines are sigs. A
// *CosignatureError names the first witness that did not.
func CheckCosignatures(text []byte, sigs []SigLine, ws []note.Verifier) error {
	for _, w := range ws {
		if _, ok := CosignatureFor(text, sigs, w); ok {
			continue
		}
		forged := false
		for _, s := range sigs {
			forged = forged || (s.Name == w.Name() && s.Hash == w.KeyHash())
		}
		return &CosignatureError{Witness: w.Name(), Forged: forged}
	}
	return nil
}
