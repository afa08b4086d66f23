package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody/tlog"
)

// runLedgerCheckReceipt verifies a receipt offline, with nothing but the
// ledger's public key and the witnesses' keys: the checkpoint's signature
// with --pubkey, the entry's inclusion proof against its root, and a
// valid cosignature on the checkpoint by every --witness. It reads what
// prove prints, what GET /v1/ledger/proof answers, a call's result
// fetched with ?proof=1, or an MCP tool result carrying custody/inclusion.
// It exits 0 when all of these hold, 1 naming the first that does not, 2
// on a usage error or an unreadable input.
func (m *Main) runLedgerCheckReceipt(_ context.Context, args []string) int {
	fs := m.flags("ledger check-receipt", "(--receipt FILE | RECEIPT) --pubkey FILE [--origin O] [--witness NAME=KEY ...]")
	receipt := fs.String("receipt", "", "the receipt `FILE` (- for stdin)")
	pubFile := fs.String("pubkey", "", "the ledger's PEM public key `FILE` (required)")
	origin := fs.String("origin", "", "require the checkpoint to name origin `O`")
	var witnessArgs stringList
	fs.Var(&witnessArgs, "witness", "require a cosignature by the witness `NAME=KEY` (KEY its verifier key or base64 ed25519 public key; a bare verifier key, or a file of them one a line, also do; repeatable)")
	file, rest := splitFirstArg(args)
	if ok, code := m.parse(fs, rest); !ok {
		return code
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	if *receipt != "" && file != "" || fs.NArg() > 1 || (fs.NArg() == 1 && file != fs.Arg(0)) {
		return m.flagError(fs, "give one receipt: --receipt FILE or RECEIPT")
	}
	file += *receipt
	if file == "" || *pubFile == "" {
		return m.flagError(fs, "give one RECEIPT file (--receipt FILE, - for stdin) and --pubkey")
	}
	keys, err := readPublicKeys(*pubFile)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %v\n", err)
		return exitUsage
	}
	ws, err := witnessVerifiers(witnessArgs)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %v\n", err)
		return exitUsage
	}
	raw, err := m.readBody(file)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %v\n", err)
		return exitUsage
	}
	r, err := parseReceipt(raw)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %s: %v\n", file, err)
		return exitUsage
	}
	cp, err := verifyReceipt(r, keys, *origin, ws)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %s: FAILED: %v\n", file, err)
		return exitFailed
	}
	msg := fmt.Sprintf("ok: entry %d (%s) is in checkpoint %d of %s, root %x", r.Seq, r.Hash, cp.Size, cp.Origin, cp.Root)
	if len(ws) > 0 {
		names := make([]string, len(ws))
		for i, w := range ws {
			names[i] = w.Name()
		}
		msg += ", cosigned by " + strings.Join(names, ", ")
	}
	fmt.Fprintln(m.Stdout, msg)
	return exitOK
}

// verifyReceipt verifies r against the ledger's keys (the checkpoint it
// cites was signed by one of them, the key in force when it was signed)
// and the witnesses ws, every one of which must have cosigned it.
func verifyReceipt(r tlog.Receipt, keys []ed25519.PublicKey, origin string, ws []note.Verifier) (tlog.Checkpoint, error) {
	if len(keys) == 0 {
		return tlog.Checkpoint{}, errors.New("no public key given")
	}
	var first error
	for _, k := range keys {
		if _, _, err := tlog.Open([]byte(r.Checkpoint), origin, k); err != nil {
			first = err
			continue
		}
		return r.VerifyWitnessed(k, origin, ws)
	}
	return tlog.Checkpoint{}, fmt.Errorf("receipt of entry %d: the checkpoint is not signed by the ledger's key given with --pubkey: %w", r.Seq, first)
}

// witnessVerifiers reads the --witness values: NAME=KEY, a verifier key,
// or a file holding them one a line (# begins a comment).
func witnessVerifiers(args []string) ([]note.Verifier, error) {
	var out []note.Verifier
	for _, a := range args {
		lines := []string{a}
		if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() {
			text, err := os.ReadFile(a)
			if err != nil {
				return nil, err
			}
			lines = nil
			for _, l := range strings.Split(string(text), "\n") {
				if l, _, _ = strings.Cut(l, "#"); strings.TrimSpace(l) != "" {
					lines = append(lines, strings.TrimSpace(l))
				}
			}
		}
		for _, l := range lines {
			v, err := witnessVerifier(l)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// witnessVerifier parses one witness: a verifier key (name+hash+key), or
// NAME=KEY with KEY a verifier key of that name or a base64 ed25519
// public key.
func witnessVerifier(s string) (note.Verifier, error) {
	bad := fmt.Errorf("--witness %q: want NAME=KEY, KEY the witness's verifier key or its base64 ed25519 public key", s)
	eq, plus := strings.Index(s, "="), strings.Index(s, "+")
	if eq < 0 || (plus >= 0 && plus < eq) {
		// No NAME= before the key: a verifier key, whose name ends at
		// its first "+" and whose base64 may end in "=".
		v, err := tlog.NewWitnessVerifier(s)
		if err != nil {
			return nil, bad
		}
		return v, nil
	}
	name, key := s[:eq], s[eq+1:]
	if name == "" || key == "" {
		return nil, bad
	}
	if v, err := tlog.NewWitnessVerifier(key); err == nil {
		if v.Name() != name {
			return nil, fmt.Errorf("--witness %q: the verifier key is witness %s's", s, v.Name())
		}
		return v, nil
	}
	pub, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, bad
	}
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nil, fmt.Errorf("--witness %q: %w", s, err)
	}
	return tlog.NewWitnessVerifier(vkey)
}

// splitFirstArg takes a leading positional argument off args, so that
// RECEIPT may come before the flags.
func splitFirstArg(args []string) (string, []string) {
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || args[0] == "-") {
		return args[0], args[1:]
	}
	return "", args
}

// parseReceipt reads a receipt, a call's result carrying one as its
// "inclusion" member (POST /v1/calls?proof=1), or an MCP tool result
// carrying one under _meta "custody/inclusion". The receipt a result
// carries beside it must name the same entry.
func parseReceipt(raw []byte) (tlog.Receipt, error) {
	var wrapped struct {
		Receipt   *struct{ Seq uint64 } `json:"receipt"`
		Inclusion *tlog.Receipt         `json:"inclusion"`
		Meta      struct {
			Receipt   *struct{ Seq uint64 } `json:"custody/receipt"`
			Inclusion *tlog.Receipt         `json:"custody/inclusion"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &wrapped); err == nil {
		inc, cited := wrapped.Inclusion, wrapped.Receipt
		if inc == nil {
			inc, cited = wrapped.Meta.Inclusion, wrapped.Meta.Receipt
		}
		if inc != nil {
			if cited != nil && cited.Seq != inc.Seq {
				return *inc, fmt.Errorf("the result's receipt is of entry %d, its inclusion proof of entry %d", cited.Seq, inc.Seq)
			}
			return *inc, nil
		}
	}
	var r tlog.Receipt
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("not a receipt: %w", err)
	}
	if r.Checkpoint == "" {
		return r, errors.New("not a receipt: no checkpoint (a call's result without ?proof=1, or not yet covered?)")
	}
	return r, nil
}
