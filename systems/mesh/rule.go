package mesh

// ruleSignature names the version of the deterministic fire-weather rule
// implemented by assess. It changes whenever a threshold does.
const ruleSignature = "fwra-v1-2026-04-22"

// Thresholds of rule fwra-v1-2026-04-22. A reading at a threshold meets it.
const (
	hotSpotMaxC      = 150.0 // °C
	hotSpotAreaM2    = 1.0   // m²
	activeFireMaxC   = 300.0 // °C
	activeFireAreaM2 = 10.0  // m²
	dryHumidityPct   = 15.0  // at or below
	windSpeedMS      = 11.2  // at or above
	windGustMS       = 15.6  // at or above
	perimeterKM      = 5.0   // within: at or below
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

// assess runs rule fwra-v1-2026-04-22 on one reading. It is a pure
// function: the same reading and conditions give the same state.
func assess(r SensorReading, c Conditions) Assessment {
	a := Assessment{
		HotSpot:     atLeast(r.ThermalMaxC, hotSpotMaxC) && atLeast(r.ThermalAreaM2, hotSpotAreaM2),
		ActiveFire:  atLeast(r.ThermalMaxC, activeFireMaxC) && atLeast(r.ThermalAreaM2, activeFireAreaM2),
		FireWeather: atMost(r.HumidityPct, dryHumidityPct) && (atLeast(r.WindSpeedMS, windSpeedMS) || atLeast(r.WindGustMS, windGustMS)),
		RFW:         c.RFWActive != nil && *c.RFWActive,
		Missing:     missingSensors(r),
	}
	a.NearPerimeter = atMost(c.WFIGSProximityKM, perimeterKM)
	a.Base = baseTier(a)
	tier := a.Base
	if a.NearPerimeter {
		tier = tier.Raise()
	}
	a.State = DetectorState{
		Tier:             tier,
		RuleSignature:    ruleSignature,
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
