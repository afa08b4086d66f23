package assure

import "fmt"

// Observations is one set of vital signs, as charted for NEWS2.
type Observations struct {
	RespirationRate int     `json:"respiration_rate"`
	SpO2            int     `json:"spo2"`
	OnOxygen        bool    `json:"on_oxygen"`
	SystolicBP      int     `json:"systolic_bp"`
	Pulse           int     `json:"pulse"`
	Consciousness   string  `json:"consciousness"` // A, C (new confusion), V, P, U
	TemperatureC    float64 `json:"temperature_c"`
	// Hypercapnic selects SpO2 scale 2, for patients with a prescribed
	// target range of 88–92% (hypercapnic respiratory failure).
	Hypercapnic bool `json:"hypercapnic,omitempty"`
}

// NEWS2 is a National Early Warning Score 2 result.
type NEWS2 struct {
	Score int `json:"score"`
	// RedScore is true when any single parameter scores 3.
	RedScore bool `json:"red_score"`
	// Risk is "low", "low-medium", "medium" or "high" (RCP clinical risk).
	Risk  string         `json:"risk"`
	Parts map[string]int `json:"parts"`
}

// CalculateNEWS2 scores obs with the Royal College of Physicians NEWS2
// chart (2017). It refuses values outside what a chart can record.
func CalculateNEWS2(obs Observations) (NEWS2, error) {
	if err := checkObservations(obs); err != nil {
		return NEWS2{}, err
	}
	parts := map[string]int{
		"respiration_rate": scoreRespiration(obs.RespirationRate),
		"spo2":             scoreSpO2(obs.SpO2, obs.OnOxygen, obs.Hypercapnic),
		"air_or_oxygen":    scoreOxygen(obs.OnOxygen),
		"systolic_bp":      scoreSystolic(obs.SystolicBP),
		"pulse":            scorePulse(obs.Pulse),
		"consciousness":    scoreConsciousness(obs.Consciousness),
		"temperature":      scoreTemperature(obs.TemperatureC),
	}
	n := NEWS2{Parts: parts}
	for _, p := range parts {
		n.Score += p
		if p == 3 {
			n.RedScore = true
		}
	}
	n.Risk = news2Risk(n.Score, n.RedScore)
	return n, nil
}

func checkObservations(o Observations) error {
	switch {
	case o.RespirationRate < 0 || o.RespirationRate > 80:
		return fmt.Errorf("respiration_rate %d outside 0–80", o.RespirationRate)
	case o.SpO2 < 0 || o.SpO2 > 100:
		return fmt.Errorf("spo2 %d outside 0–100", o.SpO2)
	case o.SystolicBP < 0 || o.SystolicBP > 300:
		return fmt.Errorf("systolic_bp %d outside 0–300", o.SystolicBP)
	case o.Pulse < 0 || o.Pulse > 300:
		return fmt.Errorf("pulse %d outside 0–300", o.Pulse)
	case o.TemperatureC < 25 || o.TemperatureC > 45:
		return fmt.Errorf("temperature_c %.1f outside 25–45", o.TemperatureC)
	}
	switch o.Consciousness {
	case "A", "C", "V", "P", "U":
		return nil
	}
	return fmt.Errorf("consciousness %q is not one of A, C, V, P, U", o.Consciousness)
}

func scoreRespiration(rr int) int {
	switch {
	case rr <= 8:
		return 3
	case rr <= 11:
		return 1
	case rr <= 20:
		return 0
	case rr <= 24:
		return 2
	}
	return 3
}

func scoreSpO2(s int, oxygen, hypercapnic bool) int {
	if !hypercapnic {
		switch {
		case s <= 91:
			return 3
		case s <= 93:
			return 2
		case s <= 95:
			return 1
		}
		return 0
	}
	switch {
	case s <= 83:
		return 3
	case s <= 85:
		return 2
	case s <= 87:
		return 1
	case s <= 92 || !oxygen:
		return 0
	case s <= 94:
		return 1
	case s <= 96:
		return 2
	}
	return 3
}

func scoreOxygen(oxygen bool) int {
	if oxygen {
		return 2
	}
	return 0
}

func scoreSystolic(sbp int) int {
	switch {
	case sbp <= 90:
		return 3
	case sbp <= 100:
		return 2
	case sbp <= 110:
		return 1
	case sbp <= 219:
		return 0
	}
	return 3
}

func scorePulse(hr int) int {
	switch {
	case hr <= 40:
		return 3
	case hr <= 50:
		return 1
	case hr <= 90:
		return 0
	case hr <= 110:
		return 1
	case hr <= 130:
		return 2
	}
	return 3
}

func scoreConsciousness(c string) int {
	if c == "A" {
		return 0
	}
	return 3
}

// scoreTemperature scores a reading charted to one decimal place.
func scoreTemperature(t float64) int {
	t10 := int(t*10 + 0.5) // tenths, so 35.0 and 36.0 fall on their bands exactly
	switch {
	case t10 <= 350:
		return 3
	case t10 <= 360:
		return 1
	case t10 <= 380:
		return 0
	case t10 <= 390:
		return 1
	}
	return 2
}

// news2Risk maps a score to the RCP clinical risk band.
func news2Risk(score int, red bool) string {
	switch {
	case score >= 7:
		return "high"
	case score >= 5:
		return "medium"
	case red:
		return "low-medium"
	}
	return "low"
}
