package bench

import "slices"

// Sample is one call: its number and its latency in µs, from its
// scheduled start and from the moment a caller began it (the same when
// unpaced).
type Sample struct {
	// N is the call's number, from 1 on across a side's turns.
	N int64
	// FromSchedule is the call's latency from the time it was due: the
	// wait for a caller behind schedule counts.
	FromSchedule int64
	// FromStart is the call's latency from the moment a caller began it.
	FromStart int64
}

// FromSchedule returns s's latency from its schedule, for Latencies.
func FromSchedule(s Sample) int64 { return s.FromSchedule }

// FromStart returns s's latency from its start, for Latencies.
func FromStart(s Sample) int64 { return s.FromStart }

// Latencies returns the latencies of the samples keep keeps (all when
// nil), as of reads them, sorted.
func Latencies(samples []Sample, of func(Sample) int64, keep func(Sample) bool) []int64 {
	lat := make([]int64, 0, len(samples))
	for _, s := range samples {
		if keep == nil || keep(s) {
			lat = append(lat, of(s))
		}
	}
	slices.Sort(lat)
	return lat
}

// Percentile returns the p-th percentile of sorted values, p within
// [0, 1]: the value of rank p·len(sorted), rounded to the nearest rank and
// held within the values; 0 when there are none.
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Round rounds v to digits decimals, halves up. v is not negative: the
// harness rounds rates and ratios.
func Round(v float64, digits int) float64 {
	scale := 1.0
	for range digits {
		scale *= 10
	}
	return float64(int64(v*scale+0.5)) / scale
}
