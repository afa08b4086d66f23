package assure

import "testing"

func TestNEWS2(t *testing.T) {
	normal := Observations{RespirationRate: 16, SpO2: 98, SystolicBP: 120, Pulse: 70, Consciousness: "A", TemperatureC: 37.0}
	tests := []struct {
		name  string
		obs   func(o *Observations)
		score int
		risk  string
	}{
		{"NormalAdult", func(o *Observations) {}, 0, "low"},
		// Each boundary of the RCP chart, one parameter at a time.
		{"RR8", func(o *Observations) { o.RespirationRate = 8 }, 3, "low-medium"},
		{"RR9", func(o *Observations) { o.RespirationRate = 9 }, 1, "low"},
		{"RR11", func(o *Observations) { o.RespirationRate = 11 }, 1, "low"},
		{"RR12", func(o *Observations) { o.RespirationRate = 12 }, 0, "low"},
		{"RR20", func(o *Observations) { o.RespirationRate = 20 }, 0, "low"},
		{"RR21", func(o *Observations) { o.RespirationRate = 21 }, 2, "low"},
		{"RR24", func(o *Observations) { o.RespirationRate = 24 }, 2, "low"},
		{"RR25", func(o *Observations) { o.RespirationRate = 25 }, 3, "low-medium"},
		{"SpO2_91", func(o *Observations) { o.SpO2 = 91 }, 3, "low-medium"},
		{"SpO2_92", func(o *Observations) { o.SpO2 = 92 }, 2, "low"},
		{"SpO2_94", func(o *Observations) { o.SpO2 = 94 }, 1, "low"},
		{"SpO2_96", func(o *Observations) { o.SpO2 = 96 }, 0, "low"},
		{"Oxygen", func(o *Observations) { o.OnOxygen = true }, 2, "low"},
		{"Scale2_88Air", func(o *Observations) { o.Hypercapnic = true; o.SpO2 = 88 }, 0, "low"},
		{"Scale2_97Air", func(o *Observations) { o.Hypercapnic = true; o.SpO2 = 97 }, 0, "low"},
		{"Scale2_93O2", func(o *Observations) { o.Hypercapnic = true; o.OnOxygen = true; o.SpO2 = 93 }, 3, "low"},
		{"Scale2_97O2", func(o *Observations) { o.Hypercapnic = true; o.OnOxygen = true; o.SpO2 = 97 }, 5, "medium"},
		{"Scale2_83", func(o *Observations) { o.Hypercapnic = true; o.SpO2 = 83 }, 3, "low-medium"},
		{"Scale2_85", func(o *Observations) { o.Hypercapnic = true; o.SpO2 = 85 }, 2, "low"},
		{"SBP90", func(o *Observations) { o.SystolicBP = 90 }, 3, "low-medium"},
		{"SBP91", func(o *Observations) { o.SystolicBP = 91 }, 2, "low"},
		{"SBP101", func(o *Observations) { o.SystolicBP = 101 }, 1, "low"},
		{"SBP111", func(o *Observations) { o.SystolicBP = 111 }, 0, "low"},
		{"SBP219", func(o *Observations) { o.SystolicBP = 219 }, 0, "low"},
		{"SBP220", func(o *Observations) { o.SystolicBP = 220 }, 3, "low-medium"},
		{"HR40", func(o *Observations) { o.Pulse = 40 }, 3, "low-medium"},
		{"HR41", func(o *Observations) { o.Pulse = 41 }, 1, "low"},
		{"HR51", func(o *Observations) { o.Pulse = 51 }, 0, "low"},
		{"HR91", func(o *Observations) { o.Pulse = 91 }, 1, "low"},
		{"HR111", func(o *Observations) { o.Pulse = 111 }, 2, "low"},
		{"HR131", func(o *Observations) { o.Pulse = 131 }, 3, "low-medium"},
		{"NewConfusion", func(o *Observations) { o.Consciousness = "C" }, 3, "low-medium"},
		{"Temp35.0", func(o *Observations) { o.TemperatureC = 35.0 }, 3, "low-medium"},
		{"Temp35.1", func(o *Observations) { o.TemperatureC = 35.1 }, 1, "low"},
		{"Temp36.0", func(o *Observations) { o.TemperatureC = 36.0 }, 1, "low"},
		{"Temp36.1", func(o *Observations) { o.TemperatureC = 36.1 }, 0, "low"},
		{"Temp38.0", func(o *Observations) { o.TemperatureC = 38.0 }, 0, "low"},
		{"Temp38.1", func(o *Observations) { o.TemperatureC = 38.1 }, 1, "low"},
		{"Temp39.0", func(o *Observations) { o.TemperatureC = 39.0 }, 1, "low"},
		{"Temp39.1", func(o *Observations) { o.TemperatureC = 39.1 }, 2, "low"},
		// Worked examples: sepsis-like deterioration (RR 22 → 2, SpO2 95 → 1,
		// air → 0, SBP 105 → 1, HR 115 → 2, alert → 0, 38.5 °C → 1) = 7, high.
		{"WorkedSepsis", func(o *Observations) {
			*o = Observations{RespirationRate: 22, SpO2: 95, SystolicBP: 105, Pulse: 115, Consciousness: "A", TemperatureC: 38.5}
		}, 7, "high"},
		// COPD on oxygen, scale 2: RR 24 → 2, SpO2 90 → 0, O2 → 2, SBP 130 → 0,
		// HR 95 → 1, alert → 0, 37.4 → 0 = 5, medium.
		{"WorkedCOPD", func(o *Observations) {
			*o = Observations{RespirationRate: 24, SpO2: 90, OnOxygen: true, Hypercapnic: true, SystolicBP: 130, Pulse: 95, Consciousness: "A", TemperatureC: 37.4}
		}, 5, "medium"},
		// Every parameter at its worst: 3+3+2+3+3+3+3 = 20.
		{"Maximum", func(o *Observations) {
			*o = Observations{RespirationRate: 30, SpO2: 85, OnOxygen: true, SystolicBP: 80, Pulse: 140, Consciousness: "U", TemperatureC: 34.0}
		}, 20, "high"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := normal
			tt.obs(&o)
			got, err := CalculateNEWS2(o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Score != tt.score || got.Risk != tt.risk {
				t.Fatalf("score %d risk %s, want %d %s (parts %v)", got.Score, got.Risk, tt.score, tt.risk, got.Parts)
			}
		})
	}
}

func TestNEWS2Refuses(t *testing.T) {
	for name, o := range map[string]Observations{
		"ErrConsciousness": {RespirationRate: 16, SpO2: 98, SystolicBP: 120, Pulse: 70, Consciousness: "X", TemperatureC: 37},
		"ErrSpO2":          {RespirationRate: 16, SpO2: 101, SystolicBP: 120, Pulse: 70, Consciousness: "A", TemperatureC: 37},
		"ErrTemperature":   {RespirationRate: 16, SpO2: 98, SystolicBP: 120, Pulse: 70, Consciousness: "A", TemperatureC: 50},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := CalculateNEWS2(o); err == nil {
				t.Fatal("accepted an impossible chart")
			}
		})
	}
}
