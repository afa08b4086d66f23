package assure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
)

// RetestRef names the pack a retest reruns.
type RetestRef struct {
	// Pack is the original pack's directory as given.
	Pack string `json:"pack"`
	// LedgerHead is the hash of the original ledger's last entry.
	LedgerHead string `json:"ledger_head"`
	// ManifestSHA256 is the SHA-256 of the original manifest.json.
	ManifestSHA256 string `json:"manifest_sha256"`
	// findings are the original findings.
	findings []Finding
}

// Finding statuses in a retest.
const (
	statusResolved = "resolved"
	statusPersists = "persists"
	statusNew      = "new"
	// statusErrored: the retest's trace did not run to its end, so the
	// finding is neither resolved nor confirmed.
	statusErrored = "not_retested"
)

// RetestStatus is what became of one finding in a retest.
type RetestStatus struct {
	Status      string `json:"status"`
	FindingID   string `json:"finding_id"`
	InvariantID string `json:"invariant_id"`
	Severity    string `json:"severity"`
	InjectionID string `json:"injection_id"`
	TraceID     string `json:"trace_id"`
	Summary     string `json:"summary"`
}

// RetestReport is retest.json: every original finding marked resolved or
// persists, and the new ones.
type RetestReport struct {
	Original RetestRef      `json:"original"`
	Findings []RetestStatus `json:"findings"`
	Resolved int            `json:"resolved"`
	Persists int            `json:"persists"`
	New      int            `json:"new"`
	// NotRetested counts the original findings whose trace errored in
	// the retest.
	NotRetested int `json:"not_retested"`
}

// compareFindings marks the original findings against the retest's. A
// finding is the same when its id is: the same invariant in the same
// trace (same case, injection and repeat). A finding whose trace errored in
// the retest is not retested: never resolved by a trace that did not run.
func compareFindings(ref *RetestRef, now []Finding, errored map[string]bool) *RetestReport {
	rep := &RetestReport{Original: *ref, Findings: []RetestStatus{}}
	current := map[string]Finding{}
	for _, f := range now {
		current[f.FindingID] = f
	}
	orig := map[string]bool{}
	for _, f := range ref.findings {
		orig[f.FindingID] = true
		st := statusResolved
		if g, ok := current[f.FindingID]; ok {
			st, f = statusPersists, g
			rep.Persists++
		} else if errored[f.TraceID] {
			st = statusErrored
			rep.NotRetested++
		} else {
			rep.Resolved++
		}
		rep.Findings = append(rep.Findings, status(st, f))
	}
	for _, f := range now {
		if !orig[f.FindingID] {
			rep.New++
			rep.Findings = append(rep.Findings, status(statusNew, f))
		}
	}
	return rep
}

func status(st string, f Finding) RetestStatus {
	return RetestStatus{Status: st, FindingID: f.FindingID, InvariantID: f.InvariantID, Severity: f.Severity,
		InjectionID: f.InjectionID, TraceID: f.TraceID, Summary: f.Summary}
}

// Retest reruns the traces of the pack at dir (same envelope, seed, cases
// and repeats) against cfg's target and writes a new pack to cfg.Out that
// references the original by its ledger head. The original pack must
// verify first, and it is only ever read.
func Retest(ctx context.Context, dir string, cfg Config) (*Result, error) {
	res, err := retest(ctx, dir, cfg)
	return res, callerError("assure retest", err)
}

func retest(ctx context.Context, dir string, cfg Config) (*Result, error) {
	if within(cfg.Out, dir) {
		return nil, custody.Errorf(custody.ECONFLICT, "the retest pack %s is inside the original pack %s: the original is never modified; write the retest elsewhere", cfg.Out, dir)
	}
	rep, err := VerifyPack(dir)
	if err != nil {
		return nil, err
	}
	if !rep.OK() {
		return nil, custody.Errorf(custody.EINVALID, "the original pack does not verify (%s): a retest needs an intact original", rep.Problems[0])
	}
	info, findings, envelope, manifest, err := readOriginal(dir)
	if err != nil {
		return nil, err
	}
	seed, err := strconv.ParseUint(info.Seed, 10, 64)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "%s: seed %q: %v", FileRun, info.Seed, err)
	}
	sum := sha256.Sum256(manifest)
	cfg.Envelope, cfg.Seed, cfg.Cases, cfg.Repeat = envelope, seed, info.Cases, info.Repeat
	cfg.retest = &RetestRef{Pack: dir, LedgerHead: info.LedgerHead, ManifestSHA256: hex.EncodeToString(sum[:]), findings: findings}
	return run(ctx, cfg)
}

// within reports whether path is dir or lies inside it.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if path == "" || err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// readOriginal reads what a retest needs from a pack.
func readOriginal(dir string) (RunInfo, []Finding, []byte, []byte, error) {
	read := func(name string) ([]byte, error) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		return raw, nil
	}
	var info RunInfo
	var findings []Finding
	runRaw, err := read(FileRun)
	if err == nil {
		err = json.Unmarshal(runRaw, &info)
	}
	var envRaw, manifest, fRaw []byte
	if err == nil {
		envRaw, err = read(FileEnvelope)
	}
	if err == nil {
		manifest, err = read(FileManifest)
	}
	if err == nil {
		fRaw, err = read(FileFindings)
	}
	if err == nil {
		err = json.Unmarshal(fRaw, &findings)
	}
	if err != nil {
		return RunInfo{}, nil, nil, nil, custody.Errorf(custody.EINVALID, "original pack %s: %v", dir, err)
	}
	return info, findings, envRaw, manifest, nil
}

// erroredTraces returns the ids of the traces that did not run to their
// end.
func erroredTraces(traces []*Trace) map[string]bool {
	out := map[string]bool{}
	for _, t := range traces {
		if t.Errored() {
			out[t.Spec.TraceID] = true
		}
	}
	return out
}
