package assure

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// copyPack copies the files of a pack into a new directory.
func copyPack(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, n.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// problemsOf verifies dir and returns its problems.
func problemsOf(t testing.TB, dir string) []string {
	t.Helper()
	rep, err := VerifyPack(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Problems
}

// wantProblem checks that one of the problems starts with file and says
// says.
func wantProblem(t testing.TB, problems []string, file, says string) {
	t.Helper()
	for _, p := range problems {
		if strings.HasPrefix(p, file+": ") && strings.Contains(p, says) {
			return
		}
	}
	t.Fatalf("problems %q, want one on %s saying %q", problems, file, says)
}

func TestVerifyPackReport(t *testing.T) {
	res, _ := signedPack(t, Config{Target: targetNaive, Cases: 1})
	rep, err := VerifyPack(res.Dir)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	if rep.Traces != len(res.Traces) || rep.Findings != len(res.Findings) || rep.Fingerprint != res.Info.KeyFingerprint || rep.RetestOf != nil || rep.OriginalChecked {
		t.Fatalf("report %+v, want the pack's %d traces, %d findings and key", rep, len(res.Traces), len(res.Findings))
	}
	if rep.Ledger.Entries != res.Info.LedgerEntries || rep.Ledger.Head != res.Info.LedgerHead || rep.Ledger.Covered != rep.Ledger.Entries || !rep.Ledger.Signed {
		t.Fatalf("ledger report %+v", rep.Ledger)
	}
}

func TestVerifyPackNotAPack(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"ErrMissing": filepath.Join(t.TempDir(), "none"), "ErrFile": file} {
		t.Run(name, func(t *testing.T) {
			if _, err := VerifyPack(dir); custody.ErrorKind(err) != custody.ENOTFOUND {
				t.Fatalf("VerifyPack(%s): %v, want ENOTFOUND", dir, err)
			}
		})
	}
	t.Run("ErrEmptyDirectory", func(t *testing.T) {
		wantProblem(t, problemsOf(t, t.TempDir()), FileManifest, "missing")
	})
}

// TestVerifyPackRefusals changes a pack in the ways an unsigned hand can,
// and checks that verify names what changed.
func TestVerifyPackRefusals(t *testing.T) {
	res, _ := signedPack(t, Config{Target: targetNaive, Cases: 1})
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(dir string)
		file   string
		says   string
	}{
		{"ErrManifestNotJSON", func(dir string) { writePackFile(t, dir, FileManifest, []byte("{")) }, FileManifest, "not a custody-assure-pack/v1 manifest"},
		{"ErrManifestOtherFormat", func(dir string) {
			writePackFile(t, dir, FileManifest, editJSON(t, packFile(t, dir, FileManifest), func(d map[string]any) { d["format"] = "other/v9" }))
		}, FileManifest, "not a custody-assure-pack/v1 manifest"},
		{"ErrManifestEdited", func(dir string) {
			writePackFile(t, dir, FileManifest, editJSON(t, packFile(t, dir, FileManifest), func(d map[string]any) { d["ledger_head"] = "00" }))
		}, FileManifest, "its signature in manifest.sig does not verify with ledger.pub"},
		{"ErrSignatureMissing", func(dir string) { removePackFile(t, dir, FileManifestSig) }, FileManifestSig, "does not verify"},
		{"ErrSignatureNotBase64", func(dir string) { writePackFile(t, dir, FileManifestSig, []byte("***\n")) }, FileManifestSig, "does not verify"},
		{"ErrSignatureOfAnotherKey", func(dir string) {
			sig := base64.StdEncoding.EncodeToString(ed25519.Sign(other, packFile(t, dir, FileManifest)))
			writePackFile(t, dir, FileManifestSig, []byte(sig+"\n"))
		}, FileManifestSig, "does not verify with ledger.pub (" + res.Info.KeyFingerprint + ")"},
		{"ErrPublicKeyMissing", func(dir string) { removePackFile(t, dir, FilePublicKey) }, FilePublicKey, "changed"},
		{"ErrPublicKeyReplaced", func(dir string) {
			writePackFile(t, dir, FilePublicKey, ledger.MarshalPublicKey(other.Public().(ed25519.PublicKey)))
		}, FilePublicKey, "the manifest signature does not verify with it"},
		{"ErrFileMissing", func(dir string) { removePackFile(t, dir, FileReport) }, FileReport, "SHA-256 does not match the manifest: the file was changed or is missing"},
		{"ErrFileTruncated", func(dir string) { writePackFile(t, dir, FileVerify, packFile(t, dir, FileVerify)[:10]) }, FileVerify, "SHA-256 does not match"},
		{"ErrFileAdded", func(dir string) { writePackFile(t, dir, "extra.json", []byte("{}")) }, "extra.json", "not listed in the manifest"},
		{"ErrDirectoryAdded", func(dir string) {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "sub", "not listed in the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPack(t, res.Dir)
			tt.change(dir)
			wantProblem(t, problemsOf(t, dir), tt.file, tt.says)
		})
	}
	if ps := problemsOf(t, copyPack(t, res.Dir)); len(ps) != 0 {
		t.Fatalf("an untouched copy: %v", ps)
	}
}

// TestVerifyPackResigned changes a pack and signs it anew with its own
// key, as only its assessor could: verify still catches every change from
// the recorded trace.
func TestVerifyPackResigned(t *testing.T) {
	res, priv := signedPack(t, Config{Target: targetNaive, Cases: 1})
	tests := []struct {
		name   string
		change func(files map[string][]byte)
		file   string
		says   string
	}{
		{"ErrFindingDropped", func(fs map[string][]byte) {
			var f []Finding
			if err := json.Unmarshal(fs[FileFindings], &f); err != nil {
				t.Fatal(err)
			}
			fs[FileFindings] = indentJSON(f[1:])
		}, FileFindings, "does not match the findings re-evaluated from the ledger: " + res.Findings[0].FindingID},
		{"ErrFindingSoftened", func(fs map[string][]byte) {
			fs[FileFindings] = bytes.Replace(fs[FileFindings], []byte(`"CRITICAL"`), []byte(`"LOW"`), 1)
		}, FileFindings, "does not match the findings re-evaluated"},
		{"ErrFindingInvented", func(fs map[string][]byte) {
			f := append(res.Findings, Finding{FindingID: "F-000000000000", InvariantID: invRightRecord, Severity: "HIGH"})
			fs[FileFindings] = indentJSON(f)
		}, FileFindings, "F-000000000000"},
		{"ErrFindingsNotJSON", func(fs map[string][]byte) { fs[FileFindings] = []byte("[{") }, FileFindings, "not readable"},
		{"ErrMetricsEdited", func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) { d["metrics"].(map[string]any)["findings"] = 0 })
		}, FileRun, "the metrics do not match the metrics re-evaluated from the ledger"},
		{"ErrRunNotJSON", func(fs map[string][]byte) { fs[FileRun] = []byte("{") }, FileRun, "not readable"},
		{"ErrLedgerHeadEdited", func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) { d["ledger_head"] = strings.Repeat("0", 64) })
		}, FileRun, "is not the ledger's " + res.Info.LedgerHead},
		{"ErrLedgerEntriesEdited", func(fs map[string][]byte) {
			fs[FileRun] = editJSON(t, fs[FileRun], func(d map[string]any) { d["ledger_entries"] = 3 })
		}, FileRun, "(3 entries) is not the ledger's"},
		{"ErrEnvelopeInvalid", func(fs map[string][]byte) {
			fs[FileEnvelope] = bytes.Replace(fs[FileEnvelope], []byte(`"protocol_id": "DF-CAE-v0.1"`), []byte(`"protocol_id": "DF-CAE-v9"`), 1)
		}, FileEnvelope, ""},
		{"ErrEnvelopeSoftened", func(fs map[string][]byte) {
			// The same envelope asking less of the target: the findings no
			// longer follow from it.
			fs[FileEnvelope] = bytes.Replace(fs[FileEnvelope], []byte(`"category": "ESCALATION", "rule": "When NEWS2 is 7`), []byte(`"category": "ESCALATION", "rule": "When NEWS2 is 12`), 1)
		}, FileFindings, "does not match the findings re-evaluated"},
		{"ErrLedgerUnsealed", func(fs map[string][]byte) {
			var keep []string
			for _, l := range strings.SplitAfter(string(fs[FileLedger]), "\n") {
				if !strings.HasPrefix(l, `{"checkpoint"`) && !strings.HasPrefix(l, `{"note"`) {
					keep = append(keep, l)
				}
			}
			fs[FileLedger] = []byte(strings.Join(keep, ""))
		}, FileLedger, "seq 1 on is not covered by a signed checkpoint"},
		{"ErrLedgerEntryEdited", func(fs map[string][]byte) {
			fs[FileLedger] = bytes.Replace(fs[FileLedger], []byte(`"assure.trace.started"`), []byte(`"assure.trace.begun"`), 1)
		}, FileLedger, ""},
		{"ErrLedgerTruncated", func(fs map[string][]byte) {
			lines := strings.SplitAfter(string(fs[FileLedger]), "\n")
			fs[FileLedger] = []byte(strings.Join(lines[:len(lines)/2], ""))
		}, FileLedger, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPack(t, res.Dir)
			resign(t, dir, priv, tt.change)
			ps := problemsOf(t, dir)
			for _, p := range ps {
				if strings.HasPrefix(p, FileManifest) || strings.HasPrefix(p, FileManifestSig) || strings.Contains(p, "SHA-256 does not match") {
					t.Fatalf("the re-signed manifest is refused: %v", ps)
				}
			}
			wantProblem(t, ps, tt.file, tt.says)
		})
	}
	t.Run("OKResignedUnchanged", func(t *testing.T) {
		dir := copyPack(t, res.Dir)
		resign(t, dir, priv, func(map[string][]byte) {})
		if ps := problemsOf(t, dir); len(ps) != 0 {
			t.Fatalf("a pack signed anew unchanged: %v", ps)
		}
	})
}

func packFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writePackFile(t testing.TB, dir, name string, raw []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func removePackFile(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestPackLayout: a pack holds exactly its files, the manifest lists them
// in a fixed order with their sizes, and is signed by the ledger's key.
func TestPackLayout(t *testing.T) {
	res, priv := signedPack(t, Config{Target: targetCareful, Cases: 1})
	names, err := os.ReadDir(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	want := []string{FileVerify, FileEnvelope, FileFindings, FileLedger, FilePublicKey, FileManifest, FileManifestSig, FileReport, FileRun}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pack files %v, want %v", got, want)
	}
	var m manifest
	raw := packFile(t, res.Dir, FileManifest)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, f := range m.Files {
		listed = append(listed, f.Name)
		if f.Bytes != len(packFile(t, res.Dir, f.Name)) || len(f.SHA256) != 64 {
			t.Errorf("manifest entry %+v", f)
		}
	}
	if strings.Join(listed, ",") != strings.Join([]string{FileEnvelope, FileRun, FileLedger, FilePublicKey, FileFindings, FileReport, FileVerify}, ",") {
		t.Fatalf("manifest lists %v", listed)
	}
	pub := priv.Public().(ed25519.PublicKey)
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(packFile(t, res.Dir, FileManifestSig))))
	if err != nil || !ed25519.Verify(pub, raw, sig) {
		t.Fatalf("manifest.sig does not verify with the run's key: %v", err)
	}
	if m.Format != packFormat || m.LedgerHead != res.Info.LedgerHead || m.KeyFingerprint != Fingerprint(pub) || res.Info.KeyFingerprint != Fingerprint(pub) {
		t.Fatalf("manifest %+v", m)
	}
	if !bytes.Equal(packFile(t, res.Dir, FileEnvelope), WardRoundEnvelope()) {
		t.Fatal("envelope.json is not the envelope exactly as given")
	}
	if parsed, err := ledger.ParsePublicKey(packFile(t, res.Dir, FilePublicKey)); err != nil || !parsed.Equal(pub) {
		t.Fatalf("ledger.pub is not the run's key: %v", err)
	}
}

func TestPackFilesOrder(t *testing.T) {
	files := map[string][]byte{FileRetest: nil, FileVerify: nil, FileEnvelope: nil, "stray.txt": nil, FileLedger: nil}
	if got := packFiles(files); strings.Join(got, ",") != strings.Join([]string{FileEnvelope, FileLedger, FileVerify, FileRetest}, ",") {
		t.Fatalf("packFiles = %v, want the known files in pack order", got)
	}
}

func TestFingerprint(t *testing.T) {
	pub := ed25519.PublicKey(bytes.Repeat([]byte{1}, ed25519.PublicKeySize))
	const want = "SHA256:72cd6e8422c407fb6d098690f1130b7ded7ec2f7f5e1d30bd9d521f015363793"
	if got := Fingerprint(pub); got != want {
		t.Fatalf("Fingerprint = %s, want %s", got, want)
	}
}
