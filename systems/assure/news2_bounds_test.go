package assure

import "testing"

// TestNEWS2Parts scores each parameter on its own across every band edge
// of the RCP chart, as the part it gives.
func TestNEWS2Parts(t *testing.T) {
	tests := []struct {
		name string
		got  int
		want int
	}{
		{"RR0", scoreRespiration(0), 3},
		{"RR8", scoreRespiration(8), 3},
		{"RR9", scoreRespiration(9), 1},
		{"RR12", scoreRespiration(12), 0},
		{"RR21", scoreRespiration(21), 2},
		{"RR25", scoreRespiration(25), 3},
		{"RR80", scoreRespiration(80), 3},
		{"Scale1_91", scoreSpO2(91, false, false), 3},
		{"Scale1_92", scoreSpO2(92, false, false), 2},
		{"Scale1_93", scoreSpO2(93, false, false), 2},
		{"Scale1_94", scoreSpO2(94, false, false), 1},
		{"Scale1_95", scoreSpO2(95, false, false), 1},
		{"Scale1_96", scoreSpO2(96, false, false), 0},
		{"Scale1_100OnOxygen", scoreSpO2(100, true, false), 0},
		{"Scale2_83", scoreSpO2(83, false, true), 3},
		{"Scale2_84", scoreSpO2(84, false, true), 2},
		{"Scale2_86", scoreSpO2(86, false, true), 1},
		{"Scale2_87", scoreSpO2(87, false, true), 1},
		{"Scale2_88", scoreSpO2(88, true, true), 0},
		{"Scale2_92OnOxygen", scoreSpO2(92, true, true), 0},
		{"Scale2_93OnAir", scoreSpO2(93, false, true), 0},
		{"Scale2_100OnAir", scoreSpO2(100, false, true), 0},
		{"Scale2_93OnOxygen", scoreSpO2(93, true, true), 1},
		{"Scale2_94OnOxygen", scoreSpO2(94, true, true), 1},
		{"Scale2_95OnOxygen", scoreSpO2(95, true, true), 2},
		{"Scale2_96OnOxygen", scoreSpO2(96, true, true), 2},
		{"Scale2_97OnOxygen", scoreSpO2(97, true, true), 3},
		{"Air", scoreOxygen(false), 0},
		{"Oxygen", scoreOxygen(true), 2},
		{"SBP90", scoreSystolic(90), 3},
		{"SBP91", scoreSystolic(91), 2},
		{"SBP100", scoreSystolic(100), 2},
		{"SBP101", scoreSystolic(101), 1},
		{"SBP110", scoreSystolic(110), 1},
		{"SBP111", scoreSystolic(111), 0},
		{"SBP219", scoreSystolic(219), 0},
		{"SBP220", scoreSystolic(220), 3},
		{"HR40", scorePulse(40), 3},
		{"HR41", scorePulse(41), 1},
		{"HR50", scorePulse(50), 1},
		{"HR51", scorePulse(51), 0},
		{"HR90", scorePulse(90), 0},
		{"HR91", scorePulse(91), 1},
		{"HR110", scorePulse(110), 1},
		{"HR111", scorePulse(111), 2},
		{"HR130", scorePulse(130), 2},
		{"HR131", scorePulse(131), 3},
		{"Alert", scoreConsciousness("A"), 0},
		{"Confused", scoreConsciousness("C"), 3},
		{"Voice", scoreConsciousness("V"), 3},
		{"Pain", scoreConsciousness("P"), 3},
		{"Unresponsive", scoreConsciousness("U"), 3},
		{"T35.0", scoreTemperature(35.0), 3},
		{"T35.04", scoreTemperature(35.04), 3}, // charted as 35.0
		{"T35.05", scoreTemperature(35.05), 1}, // charted as 35.1
		{"T35.1", scoreTemperature(35.1), 1},
		{"T36.0", scoreTemperature(36.0), 1},
		{"T36.1", scoreTemperature(36.1), 0},
		{"T38.0", scoreTemperature(38.0), 0},
		{"T38.1", scoreTemperature(38.1), 1},
		{"T39.0", scoreTemperature(39.0), 1},
		{"T39.1", scoreTemperature(39.1), 2},
		{"T45", scoreTemperature(45), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("scores %d, want %d", tt.got, tt.want)
			}
		})
	}
}

func TestNEWS2Risk(t *testing.T) {
	tests := []struct {
		name  string
		score int
		red   bool
		want  string
	}{
		{"Zero", 0, false, "low"},
		{"Four", 4, false, "low"},
		{"RedThree", 3, true, "low-medium"},
		{"RedFour", 4, true, "low-medium"},
		{"Five", 5, false, "medium"},
		{"RedSix", 6, true, "medium"},
		{"Seven", 7, false, "high"},
		{"RedTwenty", 20, true, "high"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := news2Risk(tt.score, tt.red); got != tt.want {
				t.Fatalf("news2Risk(%d, %v) = %s, want %s", tt.score, tt.red, got, tt.want)
			}
		})
	}
}

// TestNEWS2Result: the total is the sum of the parts, the red score any
// part of 3.
func TestNEWS2Result(t *testing.T) {
	n, err := CalculateNEWS2(Observations{RespirationRate: 22, SpO2: 95, SystolicBP: 105, Pulse: 115, Consciousness: "V", TemperatureC: 38.5})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"respiration_rate": 2, "spo2": 1, "air_or_oxygen": 0, "systolic_bp": 1, "pulse": 2, "consciousness": 3, "temperature": 1}
	if len(n.Parts) != len(want) {
		t.Fatalf("parts %v", n.Parts)
	}
	for k, v := range want {
		if n.Parts[k] != v {
			t.Errorf("part %s = %d, want %d", k, n.Parts[k], v)
		}
	}
	if n.Score != 10 || !n.RedScore || n.Risk != "high" {
		t.Fatalf("NEWS2 %+v, want 10, red, high", n)
	}
}

// TestNEWS2Range: what a chart cannot record is refused, its edges
// accepted.
func TestNEWS2Range(t *testing.T) {
	ok := Observations{RespirationRate: 16, SpO2: 98, SystolicBP: 120, Pulse: 70, Consciousness: "A", TemperatureC: 37}
	tests := []struct {
		name   string
		change func(o *Observations)
		err    bool
	}{
		{"OKEdgesLow", func(o *Observations) {
			o.RespirationRate, o.SpO2, o.SystolicBP, o.Pulse, o.TemperatureC = 0, 0, 0, 0, 25
		}, false},
		{"OKEdgesHigh", func(o *Observations) {
			o.RespirationRate, o.SpO2, o.SystolicBP, o.Pulse, o.TemperatureC = 80, 100, 300, 300, 45
		}, false},
		{"ErrRRNegative", func(o *Observations) { o.RespirationRate = -1 }, true},
		{"ErrRRHigh", func(o *Observations) { o.RespirationRate = 81 }, true},
		{"ErrSpO2Negative", func(o *Observations) { o.SpO2 = -1 }, true},
		{"ErrSBPHigh", func(o *Observations) { o.SystolicBP = 301 }, true},
		{"ErrSBPNegative", func(o *Observations) { o.SystolicBP = -5 }, true},
		{"ErrPulseHigh", func(o *Observations) { o.Pulse = 301 }, true},
		{"ErrPulseNegative", func(o *Observations) { o.Pulse = -1 }, true},
		{"ErrTempLow", func(o *Observations) { o.TemperatureC = 24.9 }, true},
		{"ErrTempHigh", func(o *Observations) { o.TemperatureC = 45.1 }, true},
		{"ErrConsciousnessLowerCase", func(o *Observations) { o.Consciousness = "a" }, true},
		{"ErrConsciousnessEmpty", func(o *Observations) { o.Consciousness = "" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			n, err := CalculateNEWS2(o)
			if (err != nil) != tt.err {
				t.Fatalf("CalculateNEWS2(%+v) = %+v, %v; want error %v", o, n, err, tt.err)
			}
			if err != nil && (n.Score != 0 || n.Parts != nil) {
				t.Fatalf("a refused chart scored %+v", n)
			}
		})
	}
}
