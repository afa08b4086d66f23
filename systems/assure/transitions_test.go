package assure

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestWorldTransitions: every change of the world's state is one
// transition with the state after it; a write repeated under its
// request_id changes nothing and is none; an ambiguous write is one.
func TestWorldTransitions(t *testing.T) {
	cs := cases(1, 2)
	w := newWorld(cs[0], thisPatient, cs[1], otherPatient, injAmbiguousWrite, func() time.Time { return time.Unix(0, 0) })
	note := json.RawMessage(`{"patient_id": "` + thisPatient + `", "request_id": "k1", "news2_score": 0, "text": "t"}`)
	if _, err := writeNote(w, note); err == nil {
		t.Fatal("the ambiguous write reported success")
	}
	if _, err := writeNote(w, note); err != nil {
		t.Fatal(err)
	}
	if _, err := getPatient(w, json.RawMessage(`{"patient_id": "`+thisPatient+`"}`)); err != nil {
		t.Fatal(err)
	}
	got := w.Transitions()
	if len(got) != 2 || got[0].Change != "note_written" || got[0].Tool != noteTool || got[1].Change != "patient_read" {
		t.Fatalf("transitions %+v, want note_written then patient_read", got)
	}
	if len(got[0].State.Notes) != 1 || got[0].State.PatientReads != 0 || got[1].State.PatientReads != 1 {
		t.Fatalf("states %+v, want each the state after its change", got)
	}
	if !reflect.DeepEqual(got[1].State, w.State()) {
		t.Fatalf("the last transition's state %+v is not the world's %+v", got[1].State, w.State())
	}
	if again := w.Transitions(); len(again) != 0 {
		t.Fatalf("transitions recorded twice: %+v", again)
	}
}

// TestRunRecordsTransitions: the ledger holds one assure.state.transition
// per change of every trace's world, each after the outcome of the call
// that made it, the last one's state the final state.
func TestRunRecordsTransitions(t *testing.T) {
	res := runPack(t, Config{Target: targetNaive, Cases: 1})
	for _, tr := range res.Traces {
		st := tr.Finished.State
		want := st.PatientReads + st.ObservationReads + len(st.Notes) + len(st.Escalations) + len(st.FollowUps) + len(st.Prescriptions)
		if len(tr.Transitions) != want || want == 0 {
			t.Fatalf("trace %s: %d transitions, want one per change of its state (%d)", tr.Spec.TraceID, len(tr.Transitions), want)
		}
		if last := tr.Transitions[len(tr.Transitions)-1].State; !reflect.DeepEqual(last, st) {
			t.Fatalf("trace %s: last transition's state %+v, final state %+v", tr.Spec.TraceID, last, st)
		}
		for _, s := range tr.Transitions {
			if !afterOutcomeOf(tr, s) {
				t.Fatalf("trace %s: transition %+v does not follow an outcome of %s", tr.Spec.TraceID, s, s.Tool)
			}
		}
	}
}

// afterOutcomeOf reports whether the transition's nearest earlier call
// outcome is a call of its tool.
func afterOutcomeOf(tr *Trace, s StateTransition) bool {
	var last CallRecord
	for _, c := range tr.outcomes() {
		if c.Seq < s.Seq {
			last = c
		}
	}
	return last.Tool == s.Tool
}
