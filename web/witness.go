package web

import (
	"fmt"
	"io"

	"github.com/custody-dev/custody/tlog"
)

// healthBody is the body of a 200 from /healthz. Status is "degraded"
// while a witness refuses to cosign the ledger's checkpoints: the ledger
// still answers, but its history may have been rewritten since a witness
// last saw it, and restarting will not help.
type healthBody struct {
	Status    string               `json:"status"`
	Witnesses []tlog.WitnessStatus `json:"witnesses,omitempty"`
	// Upstreams are the upstream servers that are down: the status is
	// "degraded" while there is one.
	Upstreams []UpstreamHealth `json:"upstreams_down,omitempty"`
}

// UpstreamHealth is an upstream server that is down, as /healthz names it.
type UpstreamHealth struct {
	Name string `json:"name"`
	// Error is the last error of its session or of an attempt to start one.
	Error string `json:"error"`
	// Waiting says it has been down since custody started: its tools are
	// served once it comes up.
	Waiting bool `json:"waiting,omitempty"`
	// Connect says it is down until an operator connects it (POST
	// /v1/upstreams/{name}/connect, the console's Connect button).
	Connect bool `json:"connect,omitempty"`
}

func (s *Server) health() healthBody {
	h := healthBody{Status: "ok"}
	if s.cfg.Upstreams != nil {
		if h.Upstreams = s.cfg.Upstreams(); len(h.Upstreams) > 0 {
			h.Status = "degraded"
		}
	}
	if s.cfg.Witnesses == nil {
		return h
	}
	h.Witnesses = s.cfg.Witnesses()
	for _, w := range h.Witnesses {
		if w.Refused {
			h.Status = "degraded"
		}
	}
	return h
}

// writeWitnesses reports each witness: the size it cosigned last, its
// refusals and failed submissions, and whether it refuses now.
func (s *Server) writeWitnesses(w io.Writer) {
	ws := s.cfg.Witnesses()
	metric := func(name, typ, help string, value func(tlog.WitnessStatus) int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, st := range ws {
			fmt.Fprintf(w, "%s{witness=%s} %d\n", name, label(st.Name), value(st))
		}
	}
	metric("custody_witness_cosigned_size", "gauge", "Size of the latest checkpoint the witness cosigned.",
		func(st tlog.WitnessStatus) int64 { return int64(st.Cosigned) })
	metric("custody_witness_refusals_total", "counter", "Checkpoints the witness refused to cosign: the ledger's history changed under it.",
		func(st tlog.WitnessStatus) int64 { return st.Refusals })
	metric("custody_witness_failures_total", "counter", "Submissions to the witness that got no answer.",
		func(st tlog.WitnessStatus) int64 { return st.Failures })
	metric("custody_witness_refused", "gauge", "1 while the witness's last answer was a refusal.",
		func(st tlog.WitnessStatus) int64 {
			if st.Refused {
				return 1
			}
			return 0
		})
}
