package assure

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/tempstore"
)

// entryList builds ledger entries at seqs from 1.
type entryList []custody.Entry

func (es *entryList) add(kind, trace string, body any, refs map[string]string) {
	raw, ok := body.(string)
	if !ok {
		raw = string(mustJSON(body))
	}
	*es = append(*es, custody.Entry{Seq: int64(len(*es) + 1), At: "2026-03-01T09:30:00Z", Kind: kind, Trace: trace, Body: json.RawMessage(raw), Refs: refs})
}

func startBody(id string, c int) started {
	return started{TraceSpec: TraceSpec{TraceID: id, Case: c, InjectionID: baselineID, Repeat: 1, PatientID: thisPatient}, Target: targetCareful, Seed: "7"}
}

func TestTraces(t *testing.T) {
	var es entryList
	es.add(kindRunStarted, "", map[string]string{"format": packFormat}, nil)
	es.add(kindTraceStarted, "c02.BASELINE.r1", startBody("c02.BASELINE.r1", 2), nil)
	es.add(kindTraceStarted, "c01.BASELINE.r1", startBody("c01.BASELINE.r1", 1), nil)
	es.add(kindMessage, "c01.BASELINE.r1", messageBody{Index: 0, Role: "system", Content: "rules"}, nil)
	es.add(custody.KindCallStarted, "c01.BASELINE.r1", map[string]any{"tool": recordTool, "arguments": idArgs{thisPatient}}, nil)
	es.add(custody.KindCallSucceeded, "c01.BASELINE.r1", map[string]any{"tool": recordTool, "arguments": idArgs{thisPatient}, "output": map[string]string{"patient_id": thisPatient}}, nil)
	es.add(custody.KindCallRefused, "c01.BASELINE.r1", map[string]any{"tool": prescribeTool, "arguments": map[string]string{"medicine": "m"},
		"error": map[string]any{"kind": custody.EPENDING, "message": "waits", "violations": []custody.Violation{{Keyword: "approval"}}}}, map[string]string{"approval_request_id": "a1"})
	es.add(custody.KindApprovalRequest, "c01.BASELINE.r1", map[string]string{"approval_request_id": "a1", "tool": prescribeTool}, nil)
	es.add(custody.KindApprovalDecided, "c01.BASELINE.r1", map[string]string{"approval_request_id": "a1", "decision": "approved"}, nil)
	es.add(custody.KindApprovalExpired, "c01.BASELINE.r1", map[string]string{"approval_request_id": "a2"}, nil)
	es.add(kindDataPolicy, "c01.BASELINE.r1", dataPolicy{Source: "message"}, nil)
	es.add(custody.KindCallSucceeded, "someone-else", map[string]any{"tool": recordTool}, nil)
	es.add(kindTraceFinished, "c01.BASELINE.r1", finished{TraceID: "c01.BASELINE.r1", Stop: "final", Final: "done", State: WorldState{PatientID: thisPatient}}, nil)
	es.add(custody.KindApprovalEscalate, "c01.BASELINE.r1", map[string]string{"approval_request_id": "a1"}, nil)
	es.add(kindRunFinished, "", map[string]int{"completed": 2}, nil)

	ts, err := Traces(es)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Spec.TraceID != "c01.BASELINE.r1" || ts[1].Spec.TraceID != "c02.BASELINE.r1" {
		t.Fatalf("traces %v, want the two started, in trace id order", ts)
	}
	tr := ts[0]
	if tr.StartSeq != 3 || tr.Target != targetCareful || tr.Spec.Case != 1 || tr.Spec.PatientID != thisPatient {
		t.Errorf("start %+v", tr)
	}
	if len(tr.Messages) != 1 || tr.Messages[0].Seq != 4 || tr.Messages[0].Content != "rules" {
		t.Errorf("messages %+v", tr.Messages)
	}
	if len(tr.Calls) != 3 {
		t.Fatalf("calls %+v, want the three of the trace and none of another", tr.Calls)
	}
	if c := tr.Calls[1]; !c.OK() || !c.Outcome() || c.Seq != 6 || c.Tool != recordTool || string(c.Output) != `{"patient_id":"`+thisPatient+`"}` {
		t.Errorf("success %+v", c)
	}
	if c := tr.Calls[2]; c.OK() || c.ErrKind != custody.EPENDING || c.ErrMessage != "waits" || len(c.Violations) != 1 || c.Refs["approval_request_id"] != "a1" {
		t.Errorf("refusal %+v", c)
	}
	if c := tr.Calls[0]; c.Outcome() || c.OK() {
		t.Errorf("intent %+v counted as an outcome", c)
	}
	if outs := tr.outcomes(); len(outs) != 2 || outs[0].Seq != 6 || outs[1].Seq != 7 {
		t.Errorf("outcomes %+v", outs)
	}
	want := []ApprovalEvent{
		{Seq: 8, Kind: custody.KindApprovalRequest, At: "2026-03-01T09:30:00Z", ID: "a1", Tool: prescribeTool},
		{Seq: 9, Kind: custody.KindApprovalDecided, At: "2026-03-01T09:30:00Z", ID: "a1", Decision: "approved"},
		{Seq: 10, Kind: custody.KindApprovalExpired, At: "2026-03-01T09:30:00Z", ID: "a2"},
	}
	if !slices.Equal(tr.Approvals, want) {
		t.Errorf("approvals %+v", tr.Approvals)
	}
	if !slices.Equal(tr.Policy, []int64{11}) || tr.FinishSeq != 13 || tr.final() != "done" || tr.Errored() {
		t.Errorf("policy %v, finish %d %q", tr.Policy, tr.FinishSeq, tr.final())
	}
	if ts[1].Finished != nil || ts[1].final() != "" || !ts[1].Errored() || ts[1].Err() != "the trace never finished" {
		t.Errorf("an unfinished trace: %+v", ts[1])
	}
}

func TestTracesRefusesMalformedEntries(t *testing.T) {
	tests := []struct {
		name, kind, body, says string
	}{
		{"ErrStart", kindTraceStarted, `[]`, "seq 2: trace start"},
		{"ErrCall", custody.KindCallSucceeded, `{"tool": 7}`, "seq 2: call entry"},
		{"ErrApproval", custody.KindApprovalDecided, `{"decision": true}`, "seq 2: approval entry"},
		{"ErrMessage", kindMessage, `{"index": "first"}`, "seq 2: message"},
		{"ErrFinish", kindTraceFinished, `{"final": 1}`, "seq 2: trace end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var es entryList
			es.add(kindTraceStarted, "c01.X.r1", startBody("c01.X.r1", 1), nil)
			es.add(tt.kind, "c01.X.r1", tt.body, nil)
			if tt.kind == kindTraceStarted {
				es[0].Body = json.RawMessage(tt.body)
				es = es[:1]
				es[0].Seq = 2
			}
			_, err := Traces(es)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Traces: %v, want %q", err, tt.says)
			}
		})
	}
}

func TestTraceErr(t *testing.T) {
	tests := []struct {
		name string
		fin  *finished
		want string
	}{
		{"Finished", &finished{Stop: "final"}, ""},
		{"StoppedByThePolicy", &finished{Error: dataPolicyStop{}.Error()}, ""},
		{"Failed", &finished{Error: "model server unreachable"}, "model server unreachable"},
		{"NeverFinished", nil, "the trace never finished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &Trace{Finished: tt.fin}
			if tr.Err() != tt.want || tr.Errored() != (tt.want != "") {
				t.Fatalf("Err %q Errored %v, want %q", tr.Err(), tr.Errored(), tt.want)
			}
		})
	}
}

func TestSortedSeqs(t *testing.T) {
	tests := []struct {
		name     string
		in, want []int64
	}{
		{"Empty", nil, []int64{}},
		{"One", []int64{4}, []int64{4}},
		{"Unsorted", []int64{9, 3, 5}, []int64{3, 5, 9}},
		{"Repeats", []int64{5, 3, 5, 3, 3}, []int64{3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sortedSeqs(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("sortedSeqs = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadLedger reads an export of a real store: its entries, in order,
// without the checkpoint lines.
func TestReadLedger(t *testing.T) {
	ctx := context.Background()
	db, _, release, err := tempstore.Open(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for i, kind := range []string{kindRunStarted, kindTraceStarted, kindTraceFinished} {
		body := mustJSON(map[string]int{"n": i})
		if _, err := db.Append(ctx, custody.Entry{At: "2026-03-01T09:30:00Z", Kind: kind, Trace: "c01.X.r1", Actor: harnessActor, Body: body}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if _, err := db.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := db.ExportJSONL(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	es, err := readLedger(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].Kind != kindRunStarted || es[2].Kind != kindTraceFinished || es[2].Seq != 3 || es[1].Actor != harnessActor {
		t.Fatalf("entries %+v", es)
	}
	if _, err := readLedger(append(buf.Bytes(), "{not json\n"...)); err == nil || !strings.Contains(err.Error(), "read ledger") {
		t.Fatalf("a broken line: %v", err)
	}
	if es, err := readLedger(nil); err != nil || len(es) != 0 {
		t.Fatalf("an empty ledger: %v %v", es, err)
	}
}

// TestTracesOfARun: the traces read back from a pack's ledger are the
// run's plan, each with its start, its calls and its end.
func TestTracesOfARun(t *testing.T) {
	res := runPack(t, Config{Target: targetCareful, Cases: 1})
	es, err := readLedger([]byte(readFile(t, res.Dir, FileLedger)))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Traces(es)
	if err != nil {
		t.Fatal(err)
	}
	specs := plan(mustEnvelope(t), 7, 1, 1)
	if len(ts) != len(specs) {
		t.Fatalf("%d traces, want %d", len(ts), len(specs))
	}
	byID := map[string]TraceSpec{}
	for _, s := range specs {
		byID[s.TraceID] = s
	}
	for i, tr := range ts {
		if i > 0 && ts[i-1].Spec.TraceID >= tr.Spec.TraceID {
			t.Errorf("trace %s after %s: want trace id order", tr.Spec.TraceID, ts[i-1].Spec.TraceID)
		}
		if tr.Spec != byID[tr.Spec.TraceID] || tr.Target != targetCareful || tr.Finished == nil || tr.Finished.Stop != "final" || len(tr.Calls) == 0 || len(tr.Messages) < 3 {
			t.Errorf("trace %d: %+v, want its planned spec, run to its end", i, tr.Spec)
		}
		if tr.Finished.State.PatientID != tr.Spec.PatientID {
			t.Errorf("trace %s: final state of patient %s", tr.Spec.TraceID, tr.Finished.State.PatientID)
		}
		for _, m := range tr.Messages {
			if m.Seq <= tr.StartSeq || m.Seq >= tr.FinishSeq {
				t.Errorf("trace %s: message at seq %d outside the trace", tr.Spec.TraceID, m.Seq)
			}
		}
	}
}
