package assure

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// VerifyReport is what VerifyPack found. Every problem names the file (and
// the ledger seq or line) it is about.
type VerifyReport struct {
	Dir         string
	Problems    []string
	Ledger      ledger.Report
	Fingerprint string
	// Pinned is the fingerprint the pack had to be signed with; "" when
	// none was pinned.
	Pinned   string
	Traces   int
	Findings int
	RetestOf *RetestRef
	// OriginalChecked says a retest's original pack was found and its
	// ledger head and manifest match the reference.
	OriginalChecked bool
	// errored are the traces of the pack that did not run to their end.
	errored map[string]bool
}

// OK reports whether the pack verified.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

func (r *VerifyReport) problem(file, format string, args ...any) {
	r.Problems = append(r.Problems, file+": "+fmt.Sprintf(format, args...))
}

// VerifyOptions says what VerifyPackWith accepts beyond a pack that is
// whole.
type VerifyOptions struct {
	// Key pins the assessor: the fingerprint (ParseFingerprint) of the
	// only key the pack may be signed with. A pack re-signed with any
	// other key, however consistent, fails. "" accepts any key, and the
	// report names the one that signed.
	Key string
}

// VerifyPack checks an evidence pack offline: every file against the
// signed manifest, the ledger's chain and checkpoint signatures, and the
// findings and metrics re-evaluated from the recorded trace. The error is
// only for a pack that cannot be read at all (ENOTFOUND); anything wrong
// inside it is a problem in the report. It accepts a pack signed with
// any key: VerifyPackWith pins the assessor's.
func VerifyPack(dir string) (*VerifyReport, error) { return VerifyPackWith(dir, VerifyOptions{}) }

// VerifyPackWith checks a pack as VerifyPack does and, when opts.Key is
// set, that the assessor's key signed it.
func VerifyPackWith(dir string, opts VerifyOptions) (*VerifyReport, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, custody.Errorf(custody.ENOTFOUND, "no evidence pack at %s", dir)
	}
	r := &VerifyReport{Dir: dir, Pinned: opts.Key}
	files, pub := r.checkManifest(dir)
	r.checkPin()
	r.checkLedger(files, pub)
	r.reevaluate(files)
	r.checkRetest(files)
	return r, nil
}

// checkPin fails a pack not signed with the pinned key.
func (r *VerifyReport) checkPin() {
	switch {
	case r.Pinned == "":
	case r.Fingerprint == "":
		r.problem(FilePublicKey, "cannot be read: the pack is not shown to be signed by the pinned assessor key %s", r.Pinned)
	case r.Fingerprint != r.Pinned:
		r.problem(FilePublicKey, "the pack is signed by %s, not by the pinned assessor key %s: it is not that assessor's pack (someone else signed or re-signed it)", r.Fingerprint, r.Pinned)
	}
}

// ParseFingerprint reads a key fingerprint as 'custody assure key' prints
// it ("SHA256:" and 64 hex digits; the prefix may be left out) and returns
// it in that form.
func ParseFingerprint(s string) (string, error) {
	hexPart := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "SHA256:"))
	if b, err := hex.DecodeString(hexPart); err != nil || len(b) != sha256.Size {
		return "", custody.Errorf(custody.EINVALID, "key fingerprint %q: want SHA256: and 64 hex digits, as 'custody assure key' prints it", s)
	}
	return "SHA256:" + hexPart, nil
}

// PublicKeyFingerprint returns the fingerprint of a public key file (PEM,
// as ledger.pub holds it).
func PublicKeyFingerprint(text []byte) (string, error) {
	pub, err := ledger.ParsePublicKey(text)
	if err != nil {
		return "", custody.Errorf(custody.EINVALID, "public key: %v", err)
	}
	return fingerprint(pub), nil
}

// checkManifest checks the manifest signature and every file against the
// manifest, and returns the files whose bytes match it and the ledger's
// public key. When the signature fails, the problem names what changed:
// ledger.pub when its bytes differ from the manifest's, else manifest.json
// when anything it says disagrees with the pack, else manifest.sig.
func (r *VerifyReport) checkManifest(dir string) (map[string][]byte, ed25519.PublicKey) {
	raw, err := os.ReadFile(filepath.Join(dir, FileManifest))
	if err != nil {
		r.problem(FileManifest, "missing: %v", err)
		return map[string][]byte{}, nil
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Format != packFormat {
		r.problem(FileManifest, "changed: not a %s manifest", packFormat)
		return map[string][]byte{}, nil
	}
	files, changed := readListed(dir, m)
	pub := r.publicKey(dir)
	var info RunInfo
	_ = json.Unmarshal(files[FileRun], &info)
	switch sigOK := r.signatureOK(dir, raw, pub); {
	case sigOK:
	case changed[FilePublicKey] || pub == nil:
		r.problem(FilePublicKey, "changed: the manifest signature does not verify with it")
	case len(changed) > 0 || m.KeyFingerprint != fingerprint(pub) || m.LedgerHead != info.LedgerHead:
		r.problem(FileManifest, "changed: its signature in %s does not verify with %s (%s)", FileManifestSig, FilePublicKey, fingerprint(pub))
	default:
		r.problem(FileManifestSig, "the manifest signature does not verify with %s (%s)", FilePublicKey, fingerprint(pub))
	}
	for _, f := range m.Files {
		if changed[f.Name] {
			r.problem(f.Name, "SHA-256 does not match the manifest: the file was changed or is missing")
		}
	}
	r.unlisted(dir, m)
	files[FileManifest] = raw
	if pub != nil {
		r.Fingerprint = fingerprint(pub)
	}
	return files, pub
}

// readListed reads the files a manifest lists: those that match it, and
// the names of those that do not.
func readListed(dir string, m manifest) (map[string][]byte, map[string]bool) {
	files, changed := map[string][]byte{}, map[string]bool{}
	for _, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(f.Name)))
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != f.SHA256 || len(b) != f.Bytes {
			changed[f.Name] = true
			continue
		}
		files[f.Name] = b
	}
	return files, changed
}

// unlisted names files in the pack that the manifest does not list.
func (r *VerifyReport) unlisted(dir string, m manifest) {
	listed := map[string]bool{FileManifest: true, FileManifestSig: true}
	for _, f := range m.Files {
		listed[f.Name] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			r.problem(e.Name(), "not listed in the manifest")
		}
	}
}

// publicKey reads ledger.pub; nil when it cannot be read.
func (r *VerifyReport) publicKey(dir string) ed25519.PublicKey {
	text, err := os.ReadFile(filepath.Join(dir, FilePublicKey))
	if err != nil {
		return nil
	}
	pub, err := ledger.ParsePublicKey(text)
	if err != nil {
		return nil
	}
	return pub
}

// signatureOK verifies manifest.sig over the manifest bytes.
func (r *VerifyReport) signatureOK(dir string, manifest []byte, pub ed25519.PublicKey) bool {
	text, err := os.ReadFile(filepath.Join(dir, FileManifestSig))
	if err != nil || pub == nil {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	return err == nil && ed25519.Verify(pub, manifest, sig)
}

// checkLedger verifies the chain and the signed checkpoints, and that a
// checkpoint covers the whole ledger and run.json names its head.
func (r *VerifyReport) checkLedger(files map[string][]byte, pub ed25519.PublicKey) {
	jsonl, ok := files[FileLedger]
	if !ok || pub == nil {
		return
	}
	rep, err := ledger.VerifyJSONL(bytes.NewReader(jsonl), pub)
	if err != nil {
		r.problem(FileLedger, "%v", err)
		return
	}
	r.Ledger = rep
	if rep.Covered < rep.Entries {
		r.problem(FileLedger, "seq %d on is not covered by a signed checkpoint", rep.Covered+1)
	}
	var info RunInfo
	if err := json.Unmarshal(files[FileRun], &info); err == nil && files[FileRun] != nil {
		if info.LedgerHead != rep.Head || info.LedgerEntries != rep.Entries {
			r.problem(FileRun, "ledger head %s (%d entries) is not the ledger's %s (%d entries)", info.LedgerHead, info.LedgerEntries, rep.Head, rep.Entries)
		}
		r.RetestOf = info.RetestOf
	}
}

// reevaluate judges every invariant again from the recorded trace and
// compares the findings and metrics with the pack's.
func (r *VerifyReport) reevaluate(files map[string][]byte) {
	jsonl, envRaw := files[FileLedger], files[FileEnvelope]
	if jsonl == nil || envRaw == nil || files[FileFindings] == nil || files[FileRun] == nil {
		return
	}
	reg, err := LoadRegistry(nil)
	if err != nil {
		r.problem(FileEnvelope, "cannot load the contracts: %v", err)
		return
	}
	env, err := parseEnvelope(reg, envRaw)
	if err != nil {
		r.problem(FileEnvelope, "%s", custody.ErrorMessage(err))
		return
	}
	entries, err := readLedger(jsonl)
	var traces []*Trace
	if err == nil {
		traces, err = Traces(entries)
	}
	if err != nil {
		r.problem(FileLedger, "%v", err)
		return
	}
	findings := newEvaluator(env).Evaluate(traces)
	r.Traces, r.Findings, r.errored = len(traces), len(findings), erroredTraces(traces)
	r.compareFindings(files[FileFindings], findings)
	var info RunInfo
	if err := json.Unmarshal(files[FileRun], &info); err != nil {
		r.problem(FileRun, "not readable: %v", err)
		return
	}
	if !bytes.Equal(indentJSON(measure(traces, findings, info.Repeat)), indentJSON(info.Metrics)) {
		r.problem(FileRun, "the metrics do not match the metrics re-evaluated from the ledger")
	}
	if !bytes.Equal(indentJSON(info.Unassessed), indentJSON(UnassessedInvariants(env))) {
		r.problem(FileRun, "its unassessed invariants (coverage gaps) are not those of %s", FileEnvelope)
	}
}

// compareFindings names every finding that differs between the pack and
// the re-evaluation.
func (r *VerifyReport) compareFindings(raw []byte, want []Finding) {
	var got []Finding
	if err := json.Unmarshal(raw, &got); err != nil {
		r.problem(FileFindings, "not readable: %v", err)
		return
	}
	g, w := findingSet(got), findingSet(want)
	var diff []string
	for id, f := range w {
		if g[id] != f {
			diff = append(diff, id)
		}
	}
	for id := range g {
		if _, ok := w[id]; !ok {
			diff = append(diff, id)
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		r.problem(FileFindings, "does not match the findings re-evaluated from the ledger: %s", strings.Join(diff, ", "))
	}
}

func findingSet(fs []Finding) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		out[f.FindingID] = string(indentJSON(f))
	}
	return out
}

// checkRetest checks a retest pack's reference to its original: when the
// original is at hand, its manifest and ledger head must be those
// referenced, and the statuses must follow from both packs' findings.
func (r *VerifyReport) checkRetest(files map[string][]byte) {
	raw, ok := files[FileRetest]
	if !ok || r.RetestOf == nil {
		return
	}
	ref := *r.RetestOf
	man, err := os.ReadFile(filepath.Join(ref.Pack, FileManifest))
	if err != nil {
		return // the original is not at hand: the reference stands as recorded
	}
	sum := sha256.Sum256(man)
	info, orig, _, _, err := readOriginal(ref.Pack)
	if err != nil || hex.EncodeToString(sum[:]) != ref.ManifestSHA256 || info.LedgerHead != ref.LedgerHead {
		r.problem(FileRetest, "the original pack at %s is not the one referenced (ledger head %s)", ref.Pack, ref.LedgerHead)
		return
	}
	var now []Finding
	_ = json.Unmarshal(files[FileFindings], &now)
	ref.findings = orig
	if !bytes.Equal(indentJSON(compareFindings(&ref, now, r.errored)), raw) {
		r.problem(FileRetest, "the finding statuses do not follow from the original and the retest findings")
	}
	r.OriginalChecked = true
}
