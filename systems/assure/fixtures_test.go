package assure

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/tempstore"
)

// Patients of the hand-built traces: the session's and another one, both
// in the NHS number range reserved for testing.
const (
	thisPatient  = "9990001247"
	otherPatient = "9990001255"
)

// traceBuilder writes a trace the way the ledger records it: every call as
// its intent and its outcome, approvals and the end, each at the next seq.
type traceBuilder struct {
	t   testing.TB
	tr  *Trace
	seq int64
}

func newTrace(t testing.TB) *traceBuilder {
	return &traceBuilder{t: t, tr: &Trace{Spec: TraceSpec{TraceID: "c01.TEST.r1", PatientID: thisPatient, OtherID: otherPatient}}, seq: 1}
}

func (b *traceBuilder) next() int64 {
	b.seq++
	return b.seq
}

// raw encodes v as JSON; a json.RawMessage or string is taken as is.
func (b *traceBuilder) raw(v any) json.RawMessage {
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return x
	case string:
		return json.RawMessage(x)
	}
	out, err := json.Marshal(v)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// call records a call's intent and an outcome of the given kind and
// returns the seq of the outcome.
func (b *traceBuilder) call(kind, tool string, args, out any, errKind string, refs map[string]string, vs ...custody.Violation) int64 {
	b.tr.Calls = append(b.tr.Calls, CallRecord{Seq: b.next(), Kind: custody.KindCallStarted, Tool: tool, Args: b.raw(args)})
	seq := b.next()
	c := CallRecord{Seq: seq, Kind: kind, Tool: tool, Args: b.raw(args), Output: b.raw(out), ErrKind: errKind, Violations: vs, Refs: refs}
	if errKind != "" {
		c.ErrMessage = "refused or failed"
	}
	b.tr.Calls = append(b.tr.Calls, c)
	return seq
}

func (b *traceBuilder) ok(tool string, args, out any) int64 {
	return b.call(custody.KindCallSucceeded, tool, args, out, "", nil)
}

func (b *traceBuilder) okWith(tool string, args, out any, approvalID string) int64 {
	return b.call(custody.KindCallSucceeded, tool, args, out, "", map[string]string{"approval_request_id": approvalID})
}

func (b *traceBuilder) fail(tool, errKind string, args any) int64 {
	return b.call(custody.KindCallFailed, tool, args, nil, errKind, nil)
}

func (b *traceBuilder) refuse(tool, errKind string, args any, vs ...custody.Violation) int64 {
	return b.call(custody.KindCallRefused, tool, args, nil, errKind, nil, vs...)
}

func (b *traceBuilder) approval(kind, id, decision string) int64 {
	seq := b.next()
	b.tr.Approvals = append(b.tr.Approvals, ApprovalEvent{Seq: seq, Kind: kind, ID: id, Tool: prescribeTool, Decision: decision})
	return seq
}

// record reads the record of patient, as get_patient returns it.
func (b *traceBuilder) record(patient string, notes ...string) int64 {
	d := recordDoc{PatientID: patient, Name: "Test Patient-A", Due: Medication{"paracetamol", "1 g", "oral"}, RecordCode: "SYNTHETIC_TEST"}
	for _, n := range notes {
		d.Notes = append(d.Notes, recordNote{Author: "Pharmacy (synthetic)", Text: n})
	}
	return b.ok(recordTool, patientArgs{thisPatient}, d)
}

// observations serves obs, as get_observations returns them.
func (b *traceBuilder) observations(obs Observations) int64 {
	return b.ok(observationsTool, patientArgs{thisPatient}, obsDoc{PatientID: thisPatient, Observations: obs})
}

// note writes a handover note under key citing score (nil for null).
func (b *traceBuilder) note(key string, score *int) int64 {
	return b.ok(noteTool, noteArgs{PatientID: thisPatient, RequestID: key, NEWS2: score, Text: "Synthetic handover."}, map[string]string{"status": "written"})
}

func (b *traceBuilder) escalate(score int) int64 {
	return b.ok(escalationTool, escalateArgs{thisPatient, score, "deterioration"}, map[string]string{"status": "paged"})
}

// finish ends the trace with a final answer and the world's final state.
func (b *traceBuilder) finish(final string, st WorldState) *Trace {
	b.tr.FinishSeq = b.next()
	b.tr.Finished = &finished{TraceID: b.tr.Spec.TraceID, Stop: "final", Final: final, State: st}
	return b.tr
}

func intp(n int) *int { return &n }

// withScore returns normal observations changed to score exactly n, for n
// of 0, 6, 7 or 11.
func withScore(t testing.TB, n int) Observations {
	t.Helper()
	o := Observations{RespirationRate: 16, SpO2: 98, SystolicBP: 120, Pulse: 70, Consciousness: "A", TemperatureC: 37.0}
	switch n {
	case 0:
	case 6: // RR 25 → 3, SpO2 92 → 2, HR 91 → 1
		o.RespirationRate, o.SpO2, o.Pulse = 25, 92, 91
	case 7: // and 38.1 °C → 1
		o.RespirationRate, o.SpO2, o.Pulse, o.TemperatureC = 25, 92, 91, 38.1
	case 11:
		o = deteriorated()
	default:
		t.Fatalf("no observations for NEWS2 %d", n)
	}
	got, err := CalculateNEWS2(o)
	if err != nil || got.Score != n {
		t.Fatalf("observations for NEWS2 %d score %d (%v)", n, got.Score, err)
	}
	return o
}

// keptKeys opens run stores like openTestStore and keeps the signing key
// of the last one, so that a test can sign a pack it changed.
type keptKeys struct {
	mu   sync.Mutex
	priv ed25519.PrivateKey
}

func (k *keptKeys) open(ctx context.Context) (Store, ed25519.PrivateKey, func() error, error) {
	db, priv, release, err := tempstore.Open(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	k.mu.Lock()
	k.priv = priv
	k.mu.Unlock()
	return db, priv, release, nil
}

func (k *keptKeys) key() ed25519.PrivateKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.priv
}

// signedPack runs a target into a pack and returns it with its signing
// key.
func signedPack(t testing.TB, cfg Config) (*Result, ed25519.PrivateKey) {
	t.Helper()
	var k keptKeys
	cfg.OpenStore = k.open
	res := runPack(t, cfg)
	return res, k.key()
}

// resign rewrites the pack at dir with change applied to its files and a
// manifest signed anew with priv: a change only the assessor's key could
// make, which verify must still catch from the content.
func resign(t testing.TB, dir string, priv ed25519.PrivateKey, change func(files map[string][]byte)) {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{FileEnvelope, FileRun, FileLedger, FilePublicKey, FileFindings, FileReport, FileVerify, FileRetest} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = raw
	}
	change(files)
	if err := writeFiles(dir, files, priv); err != nil {
		t.Fatal(err)
	}
}

// editJSON decodes raw into a generic document, lets edit change it and
// encodes it the way the pack does.
func editJSON(t testing.TB, raw []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	return indentJSON(doc)
}
