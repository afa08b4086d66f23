package mesh

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/strictjson"
)

// The advisory reader below earns its place on the aggregator's ingest
// path: it is at least 1.5 times as fast there as the plain path, which
// checks the advisory with Wire.Check and decodes it with encoding/json.
// Measured on 2026-12-01 on a shared 2-core Xeon, twelve rounds of
//
//	go test -c -o mesh.test ./mesh
//	./mesh.test -test.run '^$' -test.bench '^BenchmarkAggregatorIngest(Plain)?$' -test.benchtime 150000x -test.benchmem
//
// gave 9.3 µs per advisory at best and 16.5 µs at the median with the
// reader (BenchmarkAggregatorIngest, 11 allocations) against 16.1 µs and
// 26.4 µs with the plain path (BenchmarkAggregatorIngestPlain, 34
// allocations): 1.73 times as fast at best, 1.60 at the median. Should a
// re-measurement show less than 1.5, the reader goes and admission uses
// the plain path. TestAdmitAdvisoryMatchesReference and FuzzAdmitAdvisory
// hold it to the plain path's refusals and results.

// admitAdvisory is hashableNumbers then encoding/json.Unmarshal, for an
// advisory that passed its contract check, in one read of raw, and gives
// exactly what they give. A reader for the advisory's own shape (the
// contract's keys, spelt exactly, with strings, numbers and booleans where
// the contract puts them) decodes the common case without reflection,
// checking every number literal, in order, as hashableNumbers does;
// anything else it meets (null, an escaped key, an unknown key, a number
// a field cannot hold) is left to both, from the start. An unhashable
// number gives notCanonical's error, as from Wire.Check. The reader's
// strings share one allocation, so a string kept apart from its advisory
// (a map key, say) should be a copy.
func admitAdvisory(raw []byte) (Advisory, error) {
	r := advReader{in: raw, checkNumbers: true}
	var adv Advisory
	ok := r.advisory(&adv)
	switch {
	case r.numErr != nil:
		// Every literal before this one was checked and passed.
		return Advisory{}, notCanonical(kindAdvisory, r.numErr)
	case ok:
		return adv, nil
	}
	if err := hashableNumbers(raw); err != nil {
		return Advisory{}, notCanonical(kindAdvisory, err)
	}
	return unmarshalAdvisory(raw)
}

// unmarshalAdvisory decodes raw with encoding/json.
func unmarshalAdvisory(raw []byte) (Advisory, error) {
	var slow Advisory
	if err := json.Unmarshal(raw, &slow); err != nil {
		return Advisory{}, &custody.Error{Kind: custody.EINVALID, Message: "advisory does not decode", Err: err}
	}
	return slow, nil
}

// advReader reads one advisory. Every method reports false for what it
// does not handle, and the caller then gives up on the reader.
//
// An advisory holds a dozen strings and a dozen optional numbers, which
// encoding/json allocates one by one. The reader makes two allocations
// instead: one string holding every plain string value, of which each
// field is a slice (see setStrings), and nums, which holds every number
// and boolean the advisory points to.
type advReader struct {
	in  []byte
	pos int
	// spans are the plain string values read, in order, set by setStrings
	// once the whole advisory is read.
	spans  [advStrings]strSpan
	nspans int
	nums   *advNumbers
	// used counts the floats of nums handed out.
	used int
	// checkNumbers has number refuse, setting numErr, a literal that
	// hashableNumbers refuses.
	checkNumbers bool
	numErr       error
}

// advStrings bounds the plain string values the reader keeps: an
// advisory has nine string fields, and one read twice is left to
// encoding/json when there are more.
const advStrings = 12

// strSpan is a string value at in[start:end] for a field.
type strSpan struct {
	field      strField
	start, end int
}

// strField names a string field of an advisory. The reader keeps a field,
// not a pointer to it, so that the advisory it decodes into can stay on
// the stack.
type strField uint8

// The string fields of an advisory.
const (
	fieldSchemaVersion strField = iota
	fieldNodeID
	fieldMGRS
	fieldObservationTS
	fieldTier
	fieldRuleSignature
	fieldAdvisoryText
	fieldModel
	fieldAdapter
)

// of returns the field of adv; Adapter must not be nil.
func (f strField) of(adv *Advisory) *string {
	switch f {
	case fieldSchemaVersion:
		return &adv.SchemaVersion
	case fieldNodeID:
		return &adv.NodeID
	case fieldMGRS:
		return &adv.Position.MGRS
	case fieldObservationTS:
		return &adv.ObservationTS
	case fieldTier:
		return (*string)(&adv.DetectorState.Tier)
	case fieldRuleSignature:
		return &adv.DetectorState.RuleSignature
	case fieldAdvisoryText:
		return &adv.AdvisoryText
	case fieldModel:
		return &adv.ComposerSignature.Model
	}
	return adv.ComposerSignature.Adapter
}

// advFloats is the number of float fields of an advisory.
const advFloats = 12

// advNumbers holds the values that the optional fields of one advisory
// point to.
type advNumbers struct {
	floats [advFloats]float64
	n      int
	b      bool
}

func (r *advReader) advisory(adv *Advisory) bool {
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "schema_version":
			return r.str(&adv.SchemaVersion, fieldSchemaVersion)
		case "node_id":
			return r.str(&adv.NodeID, fieldNodeID)
		case "position":
			return r.position(&adv.Position)
		case "observation_ts":
			return r.str(&adv.ObservationTS, fieldObservationTS)
		case "sensor_reading":
			return r.reading(&adv.SensorReading)
		case "detector_state":
			return r.detector(&adv.DetectorState)
		case "advisory_text":
			return r.str(&adv.AdvisoryText, fieldAdvisoryText)
		case "composer_signature":
			return r.composer(&adv.ComposerSignature)
		}
		return false
	})
	r.space()
	if !ok || r.pos != len(r.in) {
		return false
	}
	r.setStrings(adv)
	return true
}

// setStrings copies the plain string values read into one string and sets
// each field of adv to its slice of it.
func (r *advReader) setStrings(adv *Advisory) {
	spans := r.spans[:r.nspans]
	n := 0
	for _, sp := range spans {
		n += sp.end - sp.start
	}
	var b strings.Builder
	b.Grow(n)
	for _, sp := range spans {
		b.Write(r.in[sp.start:sp.end])
	}
	all, off := b.String(), 0
	for _, sp := range spans {
		next := off + sp.end - sp.start
		*sp.field.of(adv) = all[off:next]
		off = next
	}
}

func (r *advReader) position(p *Position) bool {
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "mgrs":
			return r.str(&p.MGRS, fieldMGRS)
		case "lat":
			return r.float(&p.Lat)
		case "lon":
			return r.float(&p.Lon)
		case "uncertainty_m":
			return r.float(&p.UncertaintyM)
		}
		return false
	})
}

func (r *advReader) reading(s *SensorReading) bool {
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "thermal_max_c":
			return r.float(&s.ThermalMaxC)
		case "thermal_area_m2":
			return r.float(&s.ThermalAreaM2)
		case "thermal_anomaly_pixels":
			return r.int(&s.ThermalAnomalyPixels)
		case "ambient_c":
			return r.float(&s.AmbientC)
		case "humidity_pct":
			return r.float(&s.HumidityPct)
		case "wind_speed_ms":
			return r.float(&s.WindSpeedMS)
		case "wind_gust_ms":
			return r.float(&s.WindGustMS)
		case "wind_dir_deg":
			return r.float(&s.WindDirDeg)
		}
		return false
	})
}

func (r *advReader) detector(d *DetectorState) bool {
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "tier":
			return r.str((*string)(&d.Tier), fieldTier)
		case "rule_signature":
			return r.str(&d.RuleSignature, fieldRuleSignature)
		case "wfigs_proximity_km":
			return r.float(&d.WFIGSProximityKM)
		case "rfw_active":
			return r.bool(&d.RFWActive)
		}
		return false
	})
}

func (r *advReader) composer(c *ComposerSignature) bool {
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "model":
			return r.str(&c.Model, fieldModel)
		case "adapter":
			if c.Adapter == nil {
				c.Adapter = new(string)
			}
			return r.str(c.Adapter, fieldAdapter)
		case "wall_s":
			return r.float(&c.WallS)
		}
		return false
	})
}

func (r *advReader) space() {
	for r.pos < len(r.in) {
		switch r.in[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// next skips space and reports whether the next byte is c, stepping over
// it when it is.
func (r *advReader) next(c byte) bool {
	r.space()
	if r.pos < len(r.in) && r.in[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// object reads an object, calling member for each key with r at its value.
func (r *advReader) object(member func(key []byte) bool) bool {
	if !r.next('{') {
		return false
	}
	if r.next('}') {
		return true
	}
	for {
		r.space()
		key, ok := r.plain()
		if !ok || !r.next(':') {
			return false
		}
		r.space()
		if !member(key) {
			return false
		}
		if r.next('}') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

// plain reads a string without escapes or control characters, in valid
// UTF-8, and returns its bytes. The shared strict reader reads it.
func (r *advReader) plain() ([]byte, bool) {
	if r.pos >= len(r.in) || r.in[r.pos] != '"' {
		return nil, false
	}
	d := strictjson.Reader{In: r.in, Pos: r.pos}
	s, escaped, err := d.String(nil)
	if err != nil || escaped {
		return nil, false
	}
	r.pos = d.Pos
	return s, true
}

// str reads a string value for field, which is *dst, with the shared
// strict reader: a plain one is kept as a span for setStrings, and one
// with escapes is set at once, dropping any span of the field read before
// it.
func (r *advReader) str(dst *string, field strField) bool {
	if r.pos >= len(r.in) || r.in[r.pos] != '"' {
		return false
	}
	d := strictjson.Reader{In: r.in, Pos: r.pos}
	s, escaped, err := d.String(nil)
	if err != nil {
		return false
	}
	start := r.pos + 1
	r.pos = d.Pos
	if escaped {
		r.nspans = len(slices.DeleteFunc(r.spans[:r.nspans], func(sp strSpan) bool { return sp.field == field }))
		*dst = string(s)
		return true
	}
	if r.nspans == len(r.spans) {
		return false
	}
	r.spans[r.nspans] = strSpan{field: field, start: start, end: r.pos - 1}
	r.nspans++
	return true
}

// numbers returns the block holding the advisory's numbers, allocated the
// first time.
func (r *advReader) numbers() *advNumbers {
	if r.nums == nil {
		r.nums = new(advNumbers)
	}
	return r.nums
}

// newFloat returns a float of r.nums not yet handed out, or a new one
// should an advisory ever hold more floats than its fields.
func (r *advReader) newFloat() *float64 {
	nums := r.numbers()
	if r.used == len(nums.floats) {
		return new(float64)
	}
	r.used++
	return &nums.floats[r.used-1]
}

// number reads the number literal at r.pos. With checkNumbers, it refuses
// one hashableNumbers refuses, setting numErr.
func (r *advReader) number(n *numLit) bool {
	start := r.pos
	if !scanNumber(n, r.in, start) {
		return false
	}
	r.pos += len(n.text)
	if r.checkNumbers && !n.hashable() {
		if err := numberError(r.in, start, r.pos); err != nil {
			r.numErr = err
			return false
		}
	}
	return true
}

// float reads a number as encoding/json does into a *float64.
func (r *advReader) float(dst **float64) bool {
	var n numLit
	if !r.number(&n) {
		return false
	}
	f, ok := n.exactFloat()
	if !ok {
		var err error
		if f, err = strconv.ParseFloat(string(n.text), 64); err != nil {
			return false
		}
	}
	if *dst == nil {
		*dst = r.newFloat()
	}
	**dst = f
	return true
}

// int reads a number as encoding/json does into an *int.
func (r *advReader) int(dst **int) bool {
	var n numLit
	if !r.number(&n) {
		return false
	}
	i, err := strconv.ParseInt(string(n.text), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	if *dst == nil {
		*dst = &r.numbers().n
	}
	**dst = int(i)
	return true
}

func (r *advReader) bool(dst **bool) bool {
	var v bool
	switch {
	case len(r.in)-r.pos >= 4 && string(r.in[r.pos:r.pos+4]) == "true":
		v, r.pos = true, r.pos+4
	case len(r.in)-r.pos >= 5 && string(r.in[r.pos:r.pos+5]) == "false":
		r.pos += 5
	default:
		return false
	}
	if *dst == nil {
		*dst = &r.numbers().b
	}
	**dst = v
	return true
}
