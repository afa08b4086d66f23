package web

import (
	"fmt"
	"io"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/chaincheck"
)

// healthzBody is healthBody with the last full verification of the
// chain: while it runs, Status is "verifying" (still a 200).
type healthzBody struct {
	healthBody
	Verification *verificationBody `json:"verification,omitempty"`
}

// verificationBody is the JSON form of a chaincheck.Status.
type verificationBody struct {
	State      chaincheck.State `json:"state"`
	StartedAt  string           `json:"started_at"`
	FinishedAt string           `json:"finished_at,omitempty"`
	Size       int64            `json:"size"`
	BadSeq     int64            `json:"bad_seq,omitempty"`
	Reason     string           `json:"reason,omitempty"`
}

// verificationErr returns the error of a failed verification: /healthz
// answers 503 with it, naming the first bad seq.
func (s *Server) verificationErr() error {
	if s.cfg.Verification == nil {
		return nil
	}
	return s.cfg.Verification().Err()
}

// healthz is the body of a 200 from /healthz.
func (s *Server) healthz() healthzBody {
	h := healthzBody{healthBody: s.health()}
	if s.cfg.Verification == nil {
		return h
	}
	st := s.cfg.Verification()
	v := &verificationBody{State: st.State, StartedAt: custody.FormatTime(st.Started), Size: st.Size, BadSeq: st.BadSeq, Reason: st.Reason}
	if !st.Finished.IsZero() {
		v.FinishedAt = custody.FormatTime(st.Finished)
	}
	h.Verification = v
	if st.State == chaincheck.Verifying && h.Status == "ok" {
		h.Status = string(chaincheck.Verifying)
	}
	return h
}

// handleMetricsAll serves /metrics: the calls and the store's gauges,
// then the last full verification of the chain.
func (s *Server) handleMetricsAll(w http.ResponseWriter, r *http.Request) {
	s.handleMetrics(w, r)
	if s.cfg.Verification != nil {
		writeVerification(w, s.cfg.Verification())
	}
}

// writeVerification reports the last full verification: where it stands
// (one series a state, 1 for the current one), when it ended, how many
// entries it verified and the first bad seq.
func writeVerification(w io.Writer, st chaincheck.Status) {
	fmt.Fprint(w, "# HELP custody_ledger_verification Where the full verification of the chain run at start stands: 1 for the current state.\n"+
		"# TYPE custody_ledger_verification gauge\n")
	for _, state := range []chaincheck.State{chaincheck.Verifying, chaincheck.OK, chaincheck.Failed} {
		v := 0
		if st.State == state {
			v = 1
		}
		fmt.Fprintf(w, "custody_ledger_verification{state=%s} %d\n", label(string(state)), v)
	}
	var finished int64
	if !st.Finished.IsZero() {
		finished = st.Finished.Unix()
	}
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	gauge("custody_ledger_verified_timestamp_seconds", "When the last full verification of the chain ended, in Unix seconds; 0 while none has.", finished)
	gauge("custody_ledger_verified_entries", "Entries the last full verification of the chain found intact; 0 until one holds.", st.Size)
	gauge("custody_ledger_verification_bad_seq", "The first seq the last full verification found changed; 0 when none.", st.BadSeq)
}
