package mesh

import (
	"slices"
	"testing"
)

func TestAssessBoundaries(t *testing.T) {
	base := SensorReading{ThermalMaxC: Float(20), ThermalAreaM2: Float(0), HumidityPct: Float(50), WindSpeedMS: Float(2), WindGustMS: Float(3)}
	with := func(f func(*SensorReading)) SensorReading { r := base; f(&r); return r }
	hot := func(r *SensorReading) { r.ThermalMaxC, r.ThermalAreaM2 = Float(150), Float(1) }
	active := func(r *SensorReading) { r.ThermalMaxC, r.ThermalAreaM2 = Float(300), Float(10) }
	dryWind := func(r *SensorReading) { r.HumidityPct, r.WindSpeedMS = Float(15), Float(11.2) }
	rfw := Conditions{RFWActive: Bool(true)}
	near := func(km float64) Conditions { return Conditions{WFIGSProximityKM: Float(km)} }
	tests := []struct {
		name string
		r    SensorReading
		c    Conditions
		want Tier
	}{
		{"Clear", base, Conditions{}, Info},
		{"HotSpotAtThresholds", with(hot), Conditions{}, Warning},
		{"HotSpotTempJustBelow", with(func(r *SensorReading) { hot(r); r.ThermalMaxC = Float(149.9) }), Conditions{}, Info},
		{"HotSpotAreaJustBelow", with(func(r *SensorReading) { hot(r); r.ThermalAreaM2 = Float(0.99) }), Conditions{}, Info},
		{"ActiveFireAtThresholds", with(active), Conditions{}, Critical},
		{"ActiveFireTempJustBelow", with(func(r *SensorReading) { active(r); r.ThermalMaxC = Float(299.9) }), Conditions{}, Warning},
		{"ActiveFireAreaJustBelow", with(func(r *SensorReading) { active(r); r.ThermalAreaM2 = Float(9.9) }), Conditions{}, Warning},
		{"FireWeatherAtThresholds", with(dryWind), Conditions{}, Warning},
		{"FireWeatherHumidityJustAbove", with(func(r *SensorReading) { dryWind(r); r.HumidityPct = Float(15.1) }), Conditions{}, Info},
		{"FireWeatherWindJustBelow", with(func(r *SensorReading) { dryWind(r); r.WindSpeedMS = Float(11.1) }), Conditions{}, Info},
		{"FireWeatherByGustAtThreshold", with(func(r *SensorReading) { r.HumidityPct, r.WindGustMS = Float(15), Float(15.6) }), Conditions{}, Warning},
		{"FireWeatherGustJustBelow", with(func(r *SensorReading) { r.HumidityPct, r.WindGustMS = Float(15), Float(15.5) }), Conditions{}, Info},
		{"RFWAlone", base, rfw, Warning},
		{"RFWFalse", base, Conditions{RFWActive: Bool(false)}, Info},
		{"HotSpotWithFireWeather", with(func(r *SensorReading) { hot(r); dryWind(r) }), Conditions{}, Critical},
		{"HotSpotWithRFW", with(hot), rfw, Critical},
		{"ActiveFireWithFireWeather", with(func(r *SensorReading) { active(r); dryWind(r) }), Conditions{}, Emergency},
		{"ActiveFireWithRFW", with(active), rfw, Emergency},
		{"PerimeterAt5km", base, near(5), Warning},
		{"PerimeterJustBeyond", base, near(5.01), Info},
		{"PerimeterRaisesWarning", with(hot), near(0.5), Critical},
		{"PerimeterRaisesCritical", with(active), near(2), Emergency},
		{"PerimeterCapsAtEmergency", with(func(r *SensorReading) { active(r); dryWind(r) }), near(0), Emergency},
		{"MissingHumidityNoFireWeather", with(func(r *SensorReading) { dryWind(r); r.HumidityPct = nil }), Conditions{}, Info},
		{"MissingWindGustStillCounts", with(func(r *SensorReading) { r.HumidityPct, r.WindSpeedMS, r.WindGustMS = Float(10), nil, Float(16) }), Conditions{}, Warning},
		{"MissingThermalArea", with(func(r *SensorReading) { active(r); r.ThermalAreaM2 = nil }), Conditions{}, Info},
		{"EverythingMissing", SensorReading{}, Conditions{}, Info},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assess(tt.r, tt.c)
			if a.State.Tier != tt.want {
				t.Fatalf("tier = %s, want %s (%+v)", a.State.Tier, tt.want, a)
			}
			if a.State.RuleSignature != ruleSignature {
				t.Fatalf("rule signature = %q", a.State.RuleSignature)
			}
		})
	}
}

func TestAssessNamesMissingSensors(t *testing.T) {
	a := assess(SensorReading{ThermalMaxC: Float(20), WindGustMS: Float(4)}, Conditions{})
	want := []string{"thermal_area_m2", "humidity_pct", "wind_speed_ms"}
	if !slices.Equal(a.Missing, want) {
		t.Fatalf("missing = %v, want %v", a.Missing, want)
	}
}
