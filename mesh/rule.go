package mesh

// RuleSignature names the version of the deterministic fire-weather rule
// implemented by Assess. It changes whenever a threshold does.
const RuleSignature = "fwra-v1-2026-04-22"

// Thresholds of rule fwra-v1-2026-04-22. A reading at a threshold meets it.
const (
	HotSpotMaxC      = 150.0 // °C
	HotSpotAreaM2    = 1.0   // m²
	ActiveFireMaxC   = 300.0 // °C
	ActiveFireAreaM2 = 10.0  // m²
	DryHumidityPct   = 15.0  // at or below
	WindSpeedMS      = 11.2  // at or above
	WindGustMS       = 15.6  // at or above
	PerimeterKM      = 5.0   // within: at or below
)

// ruleSensors are the readings the rule uses, in the order an advisory
// names the absent ones.
var ruleSensors = [...]string{"thermal_max_c", "thermal_area_m2", "humidity_pct", "wind_speed_ms", "wind_gust_ms"}

// Conditions are the node's non-sensor inputs: the Red Flag Warning at its
// position and its distance to the nearest active WFIGS perimeter. Nil
// means unknown, which never makes a factor true.
type Conditions struct {
	RFWActive        *bool
	WFIGSProximityKM *float64
}

// Assessment is the rule's full output: the detector state and the
// factors behind it.
type Assessment struct {
	State         DetectorState
	HotSpot       bool
	ActiveFire    bool
	FireWeather   bool
	RFW           bool
	NearPerimeter bool
	// Base is the tier before the perimeter escalator.
	Base Tier
	// Missing names the rule's sensors that gave no reading.
	Missing []string
}

// Assess runs rule fwra-v1-2026-04-22 on one reading. It is a pure
// function: the same reading and conditions give the same state.
func Assess(r SensorReading, c Conditions) Assessment {
	a := Assessment{
		HotSpot:     atLeast(r.ThermalMaxC, HotSpotMaxC) && atLeast(r.ThermalAreaM2, HotSpotAreaM2),
		ActiveFire:  atLeast(r.ThermalMaxC, ActiveFireMaxC) && atLeast(r.ThermalAreaM2, ActiveFireAreaM2),
		FireWeather: atMost(r.HumidityPct, DryHumidityPct) && (atLeast(r.WindSpeedMS, WindSpeedMS) || atLeast(r.WindGustMS, WindGustMS)),
		RFW:         c.RFWActive != nil && *c.RFWActive,
		Missing:     missingSensors(r),
	}
	a.NearPerimeter = atMost(c.WFIGSProximityKM, PerimeterKM)
	a.Base = baseTier(a)
	tier := a.Base
	if a.NearPerimeter {
		tier = tier.Raise()
	}
	a.State = DetectorState{
		Tier:             tier,
		RuleSignature:    RuleSignature,
		WFIGSProximityKM: c.WFIGSProximityKM,
		RFWActive:        c.RFWActive,
	}
	return a
}

// baseTier applies the tier table to the factors.
func baseTier(a Assessment) Tier {
	weather := a.FireWeather || a.RFW
	switch {
	case a.ActiveFire && weather:
		return Emergency
	case a.ActiveFire, a.HotSpot && weather:
		return Critical
	case a.HotSpot, weather:
		return Warning
	}
	return Info
}

func atLeast(v *float64, limit float64) bool { return v != nil && *v >= limit }

func atMost(v *float64, limit float64) bool { return v != nil && *v <= limit }

func missingSensors(r SensorReading) []string {
	vals := [...]*float64{r.ThermalMaxC, r.ThermalAreaM2, r.HumidityPct, r.WindSpeedMS, r.WindGustMS}
	var out []string
	for i, v := range vals {
		if v == nil {
			out = append(out, ruleSensors[i])
		}
	}
	return out
}

// Reassess recomputes the detector state an advisory should carry from its
// own reading and conditions, and reports whether the advisory's state
// agrees. The aggregator refuses advisories that do not.
func Reassess(adv Advisory) (Tier, bool) {
	ds := adv.DetectorState
	if ds.RuleSignature != RuleSignature {
		return "", false
	}
	a := Assess(adv.SensorReading, Conditions{RFWActive: ds.RFWActive, WFIGSProximityKM: ds.WFIGSProximityKM})
	return a.State.Tier, a.State.Tier == ds.Tier
}
