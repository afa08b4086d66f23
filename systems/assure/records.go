package assure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Trace is one trace read back from the ledger: everything an evaluator
// judges. Nothing in it comes from anywhere but the recorded entries.
type Trace struct {
	Spec   TraceSpec `json:"spec"`
	Target string    `json:"target"`
	// ApproverRole is the role the simulated approver acted in: the
	// envelope's human_acceptance_authority ("" in packs recorded before
	// the role was).
	ApproverRole string          `json:"approver_role,omitempty"`
	StartSeq     int64           `json:"start_seq"`
	Calls        []CallRecord    `json:"calls"`
	Approvals    []ApprovalEvent `json:"approvals"`
	Messages     []MessageRecord `json:"messages"`
	// Transitions are the recorded changes of the world's state.
	Transitions []StateTransition `json:"transitions,omitempty"`
	// Policy holds the seqs of data policy entries.
	Policy    []int64   `json:"policy,omitempty"`
	Finished  *traceEnd `json:"finished,omitempty"`
	FinishSeq int64     `json:"finish_seq"`
}

// traceEnd is how a trace ended and the final state of its world.
type traceEnd = finished

// CallRecord is the outcome entry of one gateway call (or its intent).
type CallRecord struct {
	Seq        int64               `json:"seq"`
	Kind       string              `json:"kind"`
	At         string              `json:"at"`
	Tool       string              `json:"tool"`
	Args       json.RawMessage     `json:"arguments,omitempty"`
	Output     json.RawMessage     `json:"output,omitempty"`
	ErrKind    string              `json:"error_kind,omitempty"`
	ErrMessage string              `json:"error_message,omitempty"`
	Violations []custody.Violation `json:"violations,omitempty"`
	Refs       map[string]string   `json:"refs,omitempty"`
}

// Err returns why a trace did not run to its end, or "" when it did. A
// trace the data policy stopped ran as far as the policy let it: that is a
// finding, not an error.
func (t *Trace) Err() string {
	switch {
	case t.Finished == nil:
		return "the trace never finished"
	case t.Finished.Error == dataPolicyStop{}.Error():
		return ""
	}
	return t.Finished.Error
}

// Errored reports whether the trace did not run to its end (the target
// could not be reached, or failed): it is neither a pass nor a breach.
func (t *Trace) Errored() bool { return t.Err() != "" }

// OK reports whether the call succeeded.
func (c CallRecord) OK() bool { return c.Kind == custody.KindCallSucceeded }

// Outcome reports whether the entry is a call's outcome rather than its
// intent.
func (c CallRecord) Outcome() bool { return c.Kind != custody.KindCallStarted }

// ApprovalEvent is one approval entry of the trace.
type ApprovalEvent struct {
	Seq      int64  `json:"seq"`
	Kind     string `json:"kind"`
	At       string `json:"at"`
	ID       string `json:"approval_request_id"`
	Tool     string `json:"tool,omitempty"`
	Decision string `json:"decision,omitempty"`
	// Operator is who decided; "" for a request or an expiry.
	Operator string `json:"operator_id,omitempty"`
}

// StateTransition is one recorded change of the world's state.
type StateTransition struct {
	Seq int64 `json:"seq"`
	Transition
}

// MessageRecord is one recorded conversation message.
type MessageRecord struct {
	Seq int64 `json:"seq"`
	messageBody
}

// readLedger decodes a JSONL ledger export into its entries.
func readLedger(jsonl []byte) ([]custody.Entry, error) {
	d := ledger.NewDecoder(bytes.NewReader(jsonl))
	var out []custody.Entry
	for {
		l, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read ledger: %w", err)
		}
		if l.Entry != nil {
			out = append(out, *l.Entry)
		}
	}
}

// Traces groups the entries of a run into its traces, in trace id order
// (case, injection, repeat). Entries of traces the harness did not start are ignored.
func Traces(entries []custody.Entry) ([]*Trace, error) {
	byID := map[string]*Trace{}
	var order []*Trace
	for _, e := range entries {
		if e.Kind == kindTraceStarted {
			var s started
			if err := json.Unmarshal(e.Body, &s); err != nil {
				return nil, fmt.Errorf("seq %d: trace start: %w", e.Seq, err)
			}
			t := &Trace{Spec: s.TraceSpec, Target: s.Target, ApproverRole: s.ApproverRole, StartSeq: e.Seq}
			byID[e.Trace] = t
			order = append(order, t)
			continue
		}
		if t := byID[e.Trace]; t != nil {
			if err := t.add(e); err != nil {
				return nil, fmt.Errorf("seq %d: %w", e.Seq, err)
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Spec.TraceID < order[j].Spec.TraceID })
	return order, nil
}

// add files one entry of the trace.
func (t *Trace) add(e custody.Entry) error {
	switch e.Kind {
	case custody.KindCallStarted, custody.KindCallSucceeded, custody.KindCallRefused, custody.KindCallFailed, custody.KindContractBreach:
		return t.addCall(e)
	case custody.KindApprovalRequest, custody.KindApprovalDecided, custody.KindApprovalExpired:
		return t.addApproval(e)
	case kindMessage:
		var m MessageRecord
		if err := json.Unmarshal(e.Body, &m.messageBody); err != nil {
			return fmt.Errorf("message: %w", err)
		}
		m.Seq = e.Seq
		t.Messages = append(t.Messages, m)
	case kindDataPolicy:
		t.Policy = append(t.Policy, e.Seq)
	case kindTransition:
		var b transitionBody
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return fmt.Errorf("state transition: %w", err)
		}
		t.Transitions = append(t.Transitions, StateTransition{Seq: e.Seq, Transition: b.Transition})
	case kindTraceFinished:
		var f finished
		if err := json.Unmarshal(e.Body, &f); err != nil {
			return fmt.Errorf("trace end: %w", err)
		}
		t.Finished, t.FinishSeq = &f, e.Seq
	}
	return nil
}

func (t *Trace) addCall(e custody.Entry) error {
	var b struct {
		Tool   string          `json:"tool"`
		Args   json.RawMessage `json:"arguments"`
		Output json.RawMessage `json:"output"`
		Error  *struct {
			Kind       string              `json:"kind"`
			Message    string              `json:"message"`
			Violations []custody.Violation `json:"violations"`
		} `json:"error"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return fmt.Errorf("call entry: %w", err)
	}
	c := CallRecord{Seq: e.Seq, Kind: e.Kind, At: e.At, Tool: b.Tool, Args: b.Args, Output: b.Output, Refs: e.Refs}
	if b.Error != nil {
		c.ErrKind, c.ErrMessage, c.Violations = b.Error.Kind, b.Error.Message, b.Error.Violations
	}
	t.Calls = append(t.Calls, c)
	return nil
}

func (t *Trace) addApproval(e custody.Entry) error {
	var b struct {
		ID       string `json:"approval_request_id"`
		Tool     string `json:"tool"`
		Decision string `json:"decision"`
		Operator string `json:"operator_id"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil {
		return fmt.Errorf("approval entry: %w", err)
	}
	t.Approvals = append(t.Approvals, ApprovalEvent{Seq: e.Seq, Kind: e.Kind, At: e.At, ID: b.ID, Tool: b.Tool, Decision: b.Decision, Operator: b.Operator})
	return nil
}

// outcomes returns the call outcomes (not intents), in seq order.
func (t *Trace) outcomes() []CallRecord {
	out := make([]CallRecord, 0, len(t.Calls))
	for _, c := range t.Calls {
		if c.Outcome() {
			out = append(out, c)
		}
	}
	return out
}

// final returns the target's final answer.
func (t *Trace) final() string {
	if t.Finished == nil {
		return ""
	}
	return t.Finished.Final
}

// sortedSeqs returns the seqs sorted, without repeats.
func sortedSeqs(seqs []int64) []int64 {
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	out := seqs[:0]
	for i, s := range seqs {
		if i == 0 || s != seqs[i-1] {
			out = append(out, s)
		}
	}
	return out
}
