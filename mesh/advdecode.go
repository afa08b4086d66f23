package mesh

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/custody-dev/custody"
)

// decodeAdvisory decodes an advisory that passed its contract check. It
// gives exactly what encoding/json.Unmarshal gives: a reader for the
// advisory's own shape (the contract's keys, spelt exactly, with strings,
// numbers and booleans where the contract puts them) decodes the common
// case without reflection, and anything else it meets (null, an escaped
// key, an unknown key, a number a field cannot hold) is left to
// encoding/json, from the start.
func decodeAdvisory(raw []byte) (Advisory, error) {
	r := advReader{in: raw}
	var adv Advisory
	if r.advisory(&adv) {
		return adv, nil
	}
	var slow Advisory
	if err := json.Unmarshal(raw, &slow); err != nil {
		return Advisory{}, &custody.Error{Kind: custody.EINVALID, Message: "advisory does not decode", Err: err}
	}
	return slow, nil
}

// advReader reads one advisory. Every method reports false for what it
// does not handle, and the caller then gives up on the reader.
type advReader struct {
	in  []byte
	pos int
}

func (r *advReader) advisory(adv *Advisory) bool {
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "schema_version":
			return r.str(&adv.SchemaVersion)
		case "node_id":
			return r.str(&adv.NodeID)
		case "position":
			return r.position(&adv.Position)
		case "observation_ts":
			return r.str(&adv.ObservationTS)
		case "sensor_reading":
			return r.reading(&adv.SensorReading)
		case "detector_state":
			return r.detector(&adv.DetectorState)
		case "advisory_text":
			return r.str(&adv.AdvisoryText)
		case "composer_signature":
			return r.composer(&adv.ComposerSignature)
		}
		return false
	})
	r.space()
	return ok && r.pos == len(r.in)
}

func (r *advReader) position(p *Position) bool {
	return r.object(func(key []byte) bool {
		switch string(key) {
		case "mgrs":
			return r.str(&p.MGRS)
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
			var s string
			ok := r.str(&s)
			d.Tier = Tier(s)
			return ok
		case "rule_signature":
			return r.str(&d.RuleSignature)
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
			return r.str(&c.Model)
		case "adapter":
			if c.Adapter == nil {
				c.Adapter = new(string)
			}
			return r.str(c.Adapter)
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
// UTF-8, and returns its bytes.
func (r *advReader) plain() ([]byte, bool) {
	if r.pos >= len(r.in) || r.in[r.pos] != '"' {
		return nil, false
	}
	start := r.pos + 1
	ascii := true
	for i := start; i < len(r.in); i++ {
		switch c := r.in[i]; {
		case c == '"':
			s := r.in[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			r.pos = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string value; one with escapes is decoded by encoding/json.
func (r *advReader) str(dst *string) bool {
	if s, ok := r.plain(); ok {
		*dst = string(s)
		return true
	}
	end, ok := r.stringEnd()
	if !ok {
		return false
	}
	var s string
	if json.Unmarshal(r.in[r.pos:end], &s) != nil {
		return false
	}
	*dst, r.pos = s, end
	return true
}

// stringEnd returns the offset just past the string at r.pos.
func (r *advReader) stringEnd() (int, bool) {
	if r.pos >= len(r.in) || r.in[r.pos] != '"' {
		return 0, false
	}
	for i := r.pos + 1; i < len(r.in); i++ {
		switch r.in[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
		}
	}
	return 0, false
}

// number returns the number literal at r.pos.
func (r *advReader) number() ([]byte, bool) {
	start := r.pos
	for r.pos < len(r.in) {
		switch c := r.in[r.pos]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			r.pos++
			continue
		}
		break
	}
	lit := r.in[start:r.pos]
	return lit, jsonNumber(lit)
}

// jsonNumber reports whether lit is a JSON number literal.
func jsonNumber(lit []byte) bool {
	i := 0
	digits := func() int {
		d := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		return i - d
	}
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

// float reads a number as encoding/json does into a *float64.
func (r *advReader) float(dst **float64) bool {
	lit, ok := r.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	if *dst == nil {
		*dst = new(float64)
	}
	**dst = f
	return true
}

// int reads a number as encoding/json does into an *int.
func (r *advReader) int(dst **int) bool {
	lit, ok := r.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	if *dst == nil {
		*dst = new(int)
	}
	**dst = int(n)
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
		*dst = new(bool)
	}
	**dst = v
	return true
}
