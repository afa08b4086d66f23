package peas_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems/peas"
)

func wind(v float64) *float64 { return &v }

func TestDetectBoundaries(t *testing.T) {
	base := peas.Readings{CrashDensityPerMin: 0, VisibilityFt: 5000, AmbientTempF: 50, PrecipitationType: "none", TrafficSpeedMPH: 30}
	with := func(f func(*peas.Readings)) peas.Readings { r := base; f(&r); return r }
	tests := []struct {
		name     string
		r        peas.Readings
		factors  []string
		severity string
	}{
		{"Calm", base, nil, peas.Watch},
		{"CrashExactly0.5", with(func(r *peas.Readings) { r.CrashDensityPerMin = 0.5 }), nil, peas.Watch},
		{"CrashAbove0.5", with(func(r *peas.Readings) { r.CrashDensityPerMin = 0.51 }), []string{"crash"}, peas.Watch},
		{"VisibilityExactly500", with(func(r *peas.Readings) { r.VisibilityFt = 500 }), nil, peas.Watch},
		{"VisibilityBelow500", with(func(r *peas.Readings) { r.VisibilityFt = 499 }), []string{"visibility"}, peas.Watch},
		{"FreezeExactly34Snow", with(func(r *peas.Readings) { r.AmbientTempF, r.PrecipitationType = 34, "snow" }), []string{"freeze"}, peas.Watch},
		{"FreezeAbove34Snow", with(func(r *peas.Readings) { r.AmbientTempF, r.PrecipitationType = 34.1, "snow" }), nil, peas.Watch},
		{"Freeze34Rain", with(func(r *peas.Readings) { r.AmbientTempF, r.PrecipitationType = 34, "rain" }), nil, peas.Watch},
		{"FreezeSleet", with(func(r *peas.Readings) { r.AmbientTempF, r.PrecipitationType = 20, "sleet" }), []string{"freeze"}, peas.Watch},
		{"FreezingRain", with(func(r *peas.Readings) { r.AmbientTempF, r.PrecipitationType = 33, "freezing_rain" }), []string{"freeze"}, peas.Watch},
		{"SightDistance", with(func(r *peas.Readings) { r.VisibilityFt, r.TrafficSpeedMPH = 600, 65 }), []string{"sight_distance"}, peas.Watch},
		{"WindExactly30Snow", with(func(r *peas.Readings) { r.WindMPH, r.PrecipitationType = wind(30), "snow" }), []string{"blowing_snow"}, peas.Watch},
		{"Wind30NoSnow", with(func(r *peas.Readings) { r.WindMPH = wind(30) }), nil, peas.Watch},
		{"FogAtSpeedWarn", with(func(r *peas.Readings) { r.VisibilityFt, r.TrafficSpeedMPH, r.PrecipitationType = 420, 70, "fog" }),
			[]string{"visibility", "sight_distance"}, peas.Warn},
		{"CrashPlusOneCritical", with(func(r *peas.Readings) { r.CrashDensityPerMin, r.VisibilityFt = 0.6, 450 }),
			[]string{"crash", "visibility"}, peas.Critical},
		{"Whiteout", peas.Readings{CrashDensityPerMin: 1.4, VisibilityFt: 150, AmbientTempF: 24, PrecipitationType: "snow", TrafficSpeedMPH: 55, WindMPH: wind(38)},
			[]string{"crash", "visibility", "freeze", "sight_distance", "blowing_snow"}, peas.Critical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := peas.Detect(tt.r)
			var got []string
			for _, f := range d.Factors {
				got = append(got, f.Name)
			}
			if !equal(got, tt.factors) || d.Severity != tt.severity {
				t.Fatalf("Detect = factors %v severity %s, want %v %s", got, d.Severity, tt.factors, tt.severity)
			}
			checkBand(t, d)
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func checkBand(t *testing.T, d peas.Detection) {
	t.Helper()
	lo, hi := map[string]float64{peas.Watch: 0, peas.Warn: 0.5, peas.Critical: 0.8}[d.Severity],
		map[string]float64{peas.Watch: 0.5, peas.Warn: 0.8, peas.Critical: 1}[d.Severity]
	if d.Confidence < lo || d.Confidence >= hi {
		t.Fatalf("confidence %v outside the %s band [%v, %v)", d.Confidence, d.Severity, lo, hi)
	}
}

func TestStoppingSightDistance(t *testing.T) {
	// AASHTO: 1.47·V·2.5 + 1.075·V²/11.2; at 60 mph about 566 ft.
	if got := peas.StoppingSightDistance(60); math.Abs(got-566.04) > 0.1 {
		t.Fatalf("SSD(60) = %v, want ~566.04", got)
	}
}

// randomReadings draws readings over the contract's ranges.
func randomReadings(rng *rand.Rand) peas.Readings {
	precip := []string{"none", "rain", "snow", "sleet", "freezing_rain", "fog"}
	r := peas.Readings{
		CrashDensityPerMin: rng.Float64() * 3,
		VisibilityFt:       rng.IntN(6000),
		AmbientTempF:       -20 + rng.Float64()*80,
		PrecipitationType:  precip[rng.IntN(len(precip))],
		TrafficSpeedMPH:    rng.Float64() * 90,
	}
	if rng.IntN(4) > 0 {
		r.WindMPH = wind(rng.Float64() * 60)
	}
	return r
}

// towardDanger moves one reading toward danger: more crashes, less
// visibility, colder, faster or windier.
func towardDanger(r peas.Readings, rng *rand.Rand) peas.Readings {
	step := rng.Float64()
	switch rng.IntN(5) {
	case 0:
		r.CrashDensityPerMin += step
	case 1:
		r.VisibilityFt = max(0, r.VisibilityFt-rng.IntN(800))
	case 2:
		r.AmbientTempF -= step * 10
	case 3:
		r.TrafficSpeedMPH = min(120, r.TrafficSpeedMPH+step*20)
	case 4:
		w := step * 20
		if r.WindMPH != nil {
			w += *r.WindMPH
		}
		r.WindMPH = &w
	}
	return r
}

// TestConfidenceMonotone: confidence never decreases when a reading moves
// toward danger, and always sits in its severity's band.
func TestConfidenceMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		r := randomReadings(rng)
		moved := towardDanger(r, rng)
		before, after := peas.Detect(r), peas.Detect(moved)
		checkBand(t, before)
		checkBand(t, after)
		if after.Confidence < before.Confidence {
			t.Fatalf("case %d: confidence fell %v → %v moving %+v → %+v", i, before.Confidence, after.Confidence, r, moved)
		}
		if rank(after.Severity) < rank(before.Severity) {
			t.Fatalf("case %d: severity fell %s → %s", i, before.Severity, after.Severity)
		}
	}
}

func rank(sev string) int {
	return map[string]int{peas.Watch: 0, peas.Warn: 1, peas.Critical: 2}[sev]
}

// TestEvaluateOutputValidates: the detector's output meets its contract for
// every scenario window, and reasoning cites the input fields.
func TestEvaluateOutputValidates(t *testing.T) {
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{peas.ScenarioCalm, peas.ScenarioFog, peas.ScenarioWhiteout} {
		for i, w := range peas.Scenario(name) {
			out, err := peas.Evaluate(peas.DetectInput{LocationID: "I-94:MM88-EB", Readings: w.Readings},
				"0b6f3c1e-8d2a-4f57-9c3e-5a1d2e3f4a5b", "2026-01-09T14:00:00Z")
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(out)
			if err := reg.Validate(peas.Ref(0, "output"), raw); err != nil {
				t.Fatalf("%s window %d: output refused: %v", name, i, err)
			}
			for _, f := range []string{"crash_density_per_min=", "visibility_ft=", "ambient_temp_f=", "traffic_speed_mph="} {
				if !strings.Contains(out.Reasoning, f) {
					t.Errorf("%s window %d: reasoning %q does not cite %s", name, i, out.Reasoning, f)
				}
			}
		}
	}
}
