package peas

import (
	"fmt"
	"math"
	"strings"
)

// Thresholds of the deterministic detector, as the contract states them.
const (
	crashThreshold      = 0.5 // crash reports per minute; the factor holds above it
	visibilityThreshold = 500 // feet; the factor holds below it
	freezeThreshold     = 34  // °F; the factor holds at or below it with frozen precipitation
	windThreshold       = 30  // mph; blowing snow holds at or above it with snow
	reactionTimeS       = 2.5 // AASHTO perception-reaction time, seconds
	decelerationFtS2    = 11.2
)

// Severities of a signature, in increasing order of danger.
const (
	Watch    = "watch"
	Warn     = "warn"
	Critical = "critical"
)

// Readings is one window of corridor sensor readings (the contract's
// sensor_readings). WindMPH is nil when no wind sensor reported.
type Readings struct {
	CrashDensityPerMin float64  `json:"crash_density_per_min"`
	VisibilityFt       int      `json:"visibility_ft"`
	AmbientTempF       float64  `json:"ambient_temp_f"`
	PrecipitationType  string   `json:"precipitation_type,omitempty"`
	TrafficSpeedMPH    float64  `json:"traffic_speed_mph"`
	WindMPH            *float64 `json:"wind_mph,omitempty"`
}

// Factor is one threshold crossing the detector found.
type Factor struct {
	// Name is one of crash, visibility, freeze, sight_distance, blowing_snow.
	Name string
	// Text cites the value and the threshold, e.g. "visibility 300 ft < 500 ft".
	Text string
}

// Detection is the detector's deterministic verdict on one window.
type Detection struct {
	Severity   string
	Confidence float64
	Factors    []Factor
	// SSDFt is the stopping sight distance at the corridor speed.
	SSDFt float64
}

// StoppingSightDistance returns the AASHTO stopping sight distance in feet
// at speed mph: 1.47·V·t + 1.075·V²/a with t = 2.5 s and a = 11.2 ft/s².
func StoppingSightDistance(mph float64) float64 {
	return 1.47*mph*reactionTimeS + 1.075*mph*mph/decelerationFtS2
}

func frozen(precip string) bool {
	return precip == "snow" || precip == "sleet" || precip == "freezing_rain"
}

func (r Readings) wind() float64 {
	if r.WindMPH == nil {
		return 0
	}
	return *r.WindMPH
}

// Detect evaluates readings against the thresholds. It is pure: the same
// readings always give the same detection.
func Detect(r Readings) Detection {
	d := Detection{SSDFt: StoppingSightDistance(r.TrafficSpeedMPH)}
	crash := r.CrashDensityPerMin > crashThreshold
	if crash {
		d.add("crash", "crash density %s/min > 0.5/min", num(r.CrashDensityPerMin))
	}
	if r.VisibilityFt < visibilityThreshold {
		d.add("visibility", "visibility %d ft < 500 ft", r.VisibilityFt)
	}
	if r.AmbientTempF <= freezeThreshold && frozen(r.PrecipitationType) {
		d.add("freeze", "near-freezing %s F <= 34 F with %s", num(r.AmbientTempF), strings.ReplaceAll(r.PrecipitationType, "_", " "))
	}
	if float64(r.VisibilityFt) < d.SSDFt {
		d.add("sight_distance", "visibility %d ft < stopping distance %.0f ft at %s mph", r.VisibilityFt, d.SSDFt, num(r.TrafficSpeedMPH))
	}
	if r.wind() >= windThreshold && r.PrecipitationType == "snow" {
		d.add("blowing_snow", "blowing snow: wind %s mph >= 30 mph", num(r.wind()))
	}
	d.Severity = severity(crash, len(d.Factors))
	d.Confidence = confidence(d.Severity, dangerScore(r))
	return d
}

func (d *Detection) add(name, format string, args ...any) {
	d.Factors = append(d.Factors, Factor{Name: name, Text: fmt.Sprintf(format, args...)})
}

// severity is critical when the crash factor holds with any other, warn
// when two or more other factors hold, watch otherwise.
func severity(crash bool, factors int) string {
	others := factors
	if crash {
		others--
	}
	switch {
	case crash && others >= 1:
		return Critical
	case others >= 2:
		return Warn
	default:
		return Watch
	}
}

// dangerScore maps readings to [0, 1): each term grows as its reading moves
// toward danger (more crashes, less visibility, colder, faster, windier).
func dangerScore(r Readings) float64 {
	vis := math.Max(float64(r.VisibilityFt), 0)
	ssd := StoppingSightDistance(r.TrafficSpeedMPH)
	terms := []float64{
		r.CrashDensityPerMin / (r.CrashDensityPerMin + crashThreshold),
		visibilityThreshold / (vis + visibilityThreshold),
		math.Min(math.Max((60-r.AmbientTempF)/120, 0), 1),
		ssd / (ssd + vis + 1),
		r.wind() / (r.wind() + windThreshold),
	}
	var sum float64
	for _, t := range terms {
		sum += t
	}
	return sum / float64(len(terms))
}

// confidence places the danger score in the severity's band: watch in
// [0.05, 0.5), warn in [0.5, 0.8), critical in [0.8, 0.99). Truncating to
// three decimals keeps it monotone and inside the band.
func confidence(sev string, score float64) float64 {
	lo, hi := 0.05, 0.5
	switch sev {
	case Warn:
		lo, hi = 0.5, 0.8
	case Critical:
		lo, hi = 0.8, 0.99
	}
	c := lo + (hi-lo)*math.Min(score, 0.999)
	return math.Floor(c*1000) / 1000
}

// num prints a reading without trailing zeros: 0.5, 28, 1.25.
func num(f float64) string { return fmt.Sprintf("%g", f) }
