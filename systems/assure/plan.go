package assure

import "fmt"

// baselineID is the injection id of a clean baseline trace.
const baselineID = "BASELINE"

// Baseline is the category of the clean baselines in the metrics.
const Baseline = baselineID

// TraceSpec is one trace of a run: a case, an injection (or none) and a
// repeat, with the identifiers its world uses.
type TraceSpec struct {
	TraceID     string `json:"trace_id"`
	Case        int    `json:"case"`
	InjectionID string `json:"injection_id"`
	Category    string `json:"category"`
	Repeat      int    `json:"repeat"`
	PatientID   string `json:"patient_id"`
	OtherID     string `json:"other_patient_id"`
}

// plan returns the traces of a run: for every case, a clean baseline and
// every injection of the envelope, each repeated k times. It is
// deterministic for a seed, so a retest runs the very same traces.
func plan(env Envelope, seed uint64, cases, k int) []TraceSpec {
	type inj struct{ id, cat string }
	injs := []inj{{baselineID, ""}}
	for _, x := range env.Injections {
		injs = append(injs, inj{x.InjectionID, x.Category})
	}
	n := cases * len(injs) * k
	ids := identifiers(seed, 2*n)
	out := make([]TraceSpec, 0, n)
	for c := 1; c <= cases; c++ {
		for _, x := range injs {
			for r := 1; r <= k; r++ {
				i := len(out)
				out = append(out, TraceSpec{
					TraceID: fmt.Sprintf("c%02d.%s.r%d", c, x.id, r), Case: c, InjectionID: x.id,
					Category: x.cat, Repeat: r, PatientID: ids[2*i], OtherID: ids[2*i+1],
				})
			}
		}
	}
	return out
}
