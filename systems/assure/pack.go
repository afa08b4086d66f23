package assure

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/systems/llm"
)

// Pack file names.
const (
	FileEnvelope    = "envelope.json"
	FileRun         = "run.json"
	FileLedger      = "ledger.jsonl"
	FilePublicKey   = "ledger.pub"
	FileFindings    = "findings.json"
	FileReport      = "report.html"
	FileVerify      = "VERIFY.md"
	FileRetest      = "retest.json"
	FileManifest    = "manifest.json"
	FileManifestSig = "manifest.sig"
)

// packFormat names the layout of an evidence pack.
const packFormat = "custody-assure-pack/v1"

// RunInfo is run.json: what ran, on what, when, and what it measured.
type RunInfo struct {
	Format          string `json:"format"`
	Target          string `json:"target"`
	Backend         string `json:"backend"`
	Custody         string `json:"custody_version"`
	Go              string `json:"go_version"`
	Protocol        string `json:"protocol_id"`
	EnvelopeID      string `json:"envelope_id"`
	EnvelopeVersion string `json:"envelope_version"`
	EnvelopeSHA256  string `json:"envelope_sha256"`
	EnvelopeStatus  string `json:"envelope_status"`
	Seed            string `json:"seed"`
	Cases           int    `json:"cases"`
	Repeat          int    `json:"repeat"`
	Traces          int    `json:"traces"`
	Completed       int    `json:"completed"`
	StartedAt       string `json:"started_at"`
	FinishedAt      string `json:"finished_at"`
	Stopped         string `json:"stopped,omitempty"`
	LedgerHead      string `json:"ledger_head"`
	LedgerEntries   int64  `json:"ledger_entries"`
	KeyFingerprint  string `json:"key_fingerprint"`
	// Unassessed are the envelope's invariants no judge understands: the
	// coverage gaps of this run, with their text.
	Unassessed []Unassessed `json:"unassessed,omitempty"`
	Metrics    Metrics      `json:"metrics"`
	RetestOf   *RetestRef   `json:"retest_of,omitempty"`
}

// Result is a finished run and the pack it wrote.
type Result struct {
	Dir      string
	Info     RunInfo
	Findings []Finding
	Traces   []*Trace
	// Retest holds the status of every original finding of a retest.
	Retest *RetestReport
}

// Run runs the target under the envelope on every planned trace and writes
// the evidence pack to cfg.Out. The envelope is refused (EINVALID) unless
// it is valid and lint-clean. An invariant no judge understands does not
// stop the run: it is not assessed, and RunInfo.Unassessed, the report
// and VERIFY.md list it as a coverage gap. A data policy stop ends the
// run early; the pack still records everything up to the stop.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	res, err := run(ctx, cfg)
	return res, callerError("assure run", err)
}

func run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := emptyDir(cfg.Out); err != nil {
		return nil, err
	}
	reg, err := runRegistry(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	env, err := loadEnvelope(reg, cfg.Envelope)
	if err != nil {
		return nil, err
	}
	if env.Status == statusRetired && !cfg.AllowRetired {
		return nil, custody.Errorf(custody.EINVALID, "envelope %s is RETIRED: it no longer describes a workflow in use; assess the current envelope, or allow a retired one (--allow-retired)", env.EnvelopeID)
	}
	backend := cfg.Backend
	if backend == nil {
		if backend, err = openTarget(cfg.Target); err != nil {
			return nil, err
		}
	}
	info, ev, err := execute(ctx, cfg, reg, env, backend)
	if err != nil {
		return nil, err
	}
	return writePack(cfg, env, info, ev)
}

// execute runs the traces on a fresh store and seals its ledger.
func execute(ctx context.Context, cfg Config, reg *contract.Registry, env Envelope, backend llm.Backend) (RunInfo, evidence, error) {
	if cfg.OpenStore == nil {
		return RunInfo{}, evidence{}, errors.New("assure: no store to keep the run's evidence in (Config.OpenStore)")
	}
	db, priv, release, err := cfg.OpenStore(ctx)
	if err != nil {
		return RunInfo{}, evidence{}, fmt.Errorf("open store: %w", err)
	}
	defer release()
	r, err := newRunner(ctx, cfg, reg, env, db, backend)
	if err != nil {
		return RunInfo{}, evidence{}, err
	}
	specs := plan(env, cfg.Seed, cfg.Cases, cfg.Repeat)
	info := newInfo(cfg, env, backend.Name(), len(specs))
	if err := r.appendRun(ctx, kindRunStarted, info); err != nil {
		return RunInfo{}, evidence{}, err
	}
	info.Completed, err = r.runAll(ctx, specs, cfg.Workers, cfg.Progress)
	if err != nil {
		return RunInfo{}, evidence{}, err
	}
	if r.stopped.Load() {
		info.Stopped = "identifiable patient data met: the data policy stopped the run"
	}
	info.FinishedAt = custody.FormatTime(cfg.Now())
	if err := r.appendRun(ctx, kindRunFinished, map[string]any{"completed": info.Completed, "stopped": info.Stopped}); err != nil {
		return RunInfo{}, evidence{}, err
	}
	ev, err := seal(ctx, db, priv)
	return info, ev, err
}

func newInfo(cfg Config, env Envelope, backend string, traces int) RunInfo {
	sum := sha256.Sum256(cfg.Envelope)
	return RunInfo{Format: packFormat, Target: cfg.Target, Backend: backend, Custody: custodyVersion(), Go: runtime.Version(),
		Protocol: env.ProtocolID, EnvelopeID: env.EnvelopeID, EnvelopeVersion: env.Version, EnvelopeSHA256: hex.EncodeToString(sum[:]),
		EnvelopeStatus: env.Status, Seed: strconv.FormatUint(cfg.Seed, 10), Cases: cfg.Cases, Repeat: cfg.Repeat, Traces: traces,
		StartedAt: custody.FormatTime(cfg.Now()), RetestOf: cfg.retest, Unassessed: UnassessedInvariants(env)}
}

// appendRun writes a run-level entry.
func (r *runner) appendRun(ctx context.Context, kind string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	if _, err := r.ledger.Append(ctx, custody.Entry{At: custody.FormatTime(r.now()), Kind: kind, Actor: harnessActor, Body: raw}); err != nil {
		return fmt.Errorf("record %s: %w", kind, err)
	}
	return nil
}

// callerError makes err a *custody.Error for a caller: one already in
// the chain keeps its kind and message; any other failure is internal, its
// detail kept for the log.
func callerError(op string, err error) error {
	if err == nil {
		return nil
	}
	var ce *custody.Error
	if errors.As(err, &ce) {
		c := *ce
		c.Err = fmt.Errorf("%s: %w", op, err)
		return &c
	}
	return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("%s: %w", op, err)}
}

// custodyVersion names the build: the module version and VCS revision.
func custodyVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}

// emptyDir creates dir, or accepts it when it exists and is empty.
func emptyDir(dir string) error {
	if dir == "" {
		return custody.Errorf(custody.EINVALID, "no pack directory: give --out PACK")
	}
	names, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create pack directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read pack directory: %w", err)
	case len(names) > 0:
		return custody.Errorf(custody.ECONFLICT, "pack directory %s is not empty: a pack is never overwritten", dir)
	}
	return nil
}

// writePack evaluates the sealed ledger and writes every file of the pack,
// then the signed manifest.
func writePack(cfg Config, env Envelope, info RunInfo, ev evidence) (*Result, error) {
	entries, err := readLedger(ev.jsonl)
	if err != nil {
		return nil, err
	}
	traces, err := Traces(entries)
	if err != nil {
		return nil, err
	}
	findings := newEvaluator(env).Evaluate(traces)
	info.Metrics = measure(traces, findings, cfg.Repeat)
	info.LedgerHead, info.LedgerEntries, info.KeyFingerprint = ev.head, ev.entries, fingerprint(ev.pub)
	res := &Result{Dir: cfg.Out, Info: info, Findings: findings, Traces: traces}
	files := map[string][]byte{
		FileEnvelope:  cfg.Envelope,
		FileLedger:    ev.jsonl,
		FilePublicKey: ledger.MarshalPublicKey(ev.pub),
	}
	if cfg.retest != nil {
		res.Retest = compareFindings(cfg.retest, findings, erroredTraces(traces))
		files[FileRetest] = indentJSON(res.Retest)
	}
	files[FileRun] = indentJSON(info)
	files[FileFindings] = indentJSON(nonNil(findings))
	report, err := report(env, res)
	if err != nil {
		return nil, err
	}
	files[FileReport] = report
	files[FileVerify] = verifyGuide(info)
	return res, writeFiles(cfg.Out, files, ev.priv)
}

// Errored returns the traces that did not run to their end.
func (r *Result) Errored() []*Trace {
	var out []*Trace
	for _, t := range r.Traces {
		if t.Errored() {
			out = append(out, t)
		}
	}
	return out
}

func nonNil(fs []Finding) []Finding {
	if fs == nil {
		return []Finding{}
	}
	return fs
}

func indentJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return buf.Bytes()
}

// manifest lists every file of a pack with its SHA-256. It is signed with
// the ledger's checkpoint key (manifest.sig, base64 ed25519 over the exact
// bytes of manifest.json).
type manifest struct {
	Format         string         `json:"format"`
	LedgerHead     string         `json:"ledger_head"`
	KeyFingerprint string         `json:"key_fingerprint"`
	Files          []ManifestFile `json:"files"`
}

// ManifestFile is one file of a pack.
type ManifestFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// writeFiles writes the files and the signed manifest.
func writeFiles(dir string, files map[string][]byte, priv ed25519.PrivateKey) error {
	m := manifest{Format: packFormat, KeyFingerprint: fingerprint(priv.Public().(ed25519.PublicKey))}
	for _, name := range packFiles(files) {
		raw := files[name]
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		sum := sha256.Sum256(raw)
		m.Files = append(m.Files, ManifestFile{Name: name, SHA256: hex.EncodeToString(sum[:]), Bytes: len(raw)})
	}
	var info RunInfo
	_ = json.Unmarshal(files[FileRun], &info)
	m.LedgerHead = info.LedgerHead
	raw := indentJSON(m)
	if err := os.WriteFile(filepath.Join(dir, FileManifest), raw, 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, raw)) + "\n"
	if err := os.WriteFile(filepath.Join(dir, FileManifestSig), []byte(sig), 0o644); err != nil {
		return fmt.Errorf("write manifest signature: %w", err)
	}
	return nil
}

// packFiles returns the names of the files in a fixed order.
func packFiles(files map[string][]byte) []string {
	var out []string
	for _, n := range []string{FileEnvelope, FileRun, FileLedger, FilePublicKey, FileFindings, FileReport, FileVerify, FileRetest} {
		if _, ok := files[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// Fingerprint names a public key: "SHA256:" and the hex SHA-256 of its
// bytes.
func Fingerprint(pub ed25519.PublicKey) string { return fingerprint(pub) }

func fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "SHA256:" + hex.EncodeToString(sum[:])
}
