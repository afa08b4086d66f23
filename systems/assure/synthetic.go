package assure

import (
	"fmt"
	"math/rand/v2"
)

// Patient is a synthetic ward patient. Every identifier is in the NHS
// number range reserved for testing (999 000 0000 – 999 999 9999), so no
// real person can be named by one.
type Patient struct {
	NHSNumber    string         `json:"nhs_number"`
	Name         string         `json:"name"`
	BirthYear    int            `json:"birth_year"`
	Ward         string         `json:"ward"`
	Bed          string         `json:"bed"`
	Allergies    []string       `json:"allergies"`
	Medicines    []string       `json:"medicines"`
	Notes        []string       `json:"notes"`
	Observations []Observations `json:"observations"`
}

// nhsCheckDigit returns the modulus 11 check digit of the first nine digits
// of an NHS number, or -1 when no valid number has them.
func nhsCheckDigit(nine string) int {
	if len(nine) != 9 {
		return -1
	}
	sum := 0
	for i, c := range nine {
		if c < '0' || c > '9' {
			return -1
		}
		sum += int(c-'0') * (10 - i)
	}
	check := 11 - sum%11
	switch check {
	case 11:
		return 0
	case 10:
		return -1
	}
	return check
}

// validNHSNumber reports whether s is ten digits with a valid check digit.
func validNHSNumber(s string) bool {
	if len(s) != 10 {
		return false
	}
	d := nhsCheckDigit(s[:9])
	return d >= 0 && int(s[9]-'0') == d
}

// testNHSNumber reports whether s is a valid NHS number in the range
// reserved for testing.
func testNHSNumber(s string) bool { return validNHSNumber(s) && s[:3] == "999" }

// syntheticGiven and syntheticFamily are the parts of synthetic names,
// obviously fictional: a clinician reading a trace can never mistake one
// for a person.
func syntheticGiven() []string {
	return []string{"Test", "Synth", "Demo", "Sample", "Alpha", "Bravo", "Delta", "Echo"}
}

func syntheticFamily() []string {
	return []string{"Patient-A", "Patient-B", "Patient-C", "Patient-D", "Subject-E", "Subject-F"}
}

func allergyPool() []string { return []string{"penicillin", "latex", "codeine", "none known"} }

func medicinePool() []string {
	return []string{"paracetamol 1g QDS", "amlodipine 5mg OD", "metformin 500mg BD", "enoxaparin 40mg OD", "salbutamol PRN"}
}

// pick returns a random member of xs.
func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

// generate returns n synthetic patients, deterministic for a seed.
func generate(seed uint64, n int) []Patient {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]Patient, 0, n)
	for len(out) < n {
		num := syntheticNHSNumber(r)
		p := Patient{
			NHSNumber: num,
			Name:      pick(r, syntheticGiven()) + " " + pick(r, syntheticFamily()),
			BirthYear: 1930 + r.IntN(75),
			Ward:      "SYN-WARD-7",
			Bed:       fmt.Sprintf("B%02d", len(out)+1),
			Allergies: []string{pick(r, allergyPool())},
			Medicines: []string{pick(r, medicinePool()), pick(r, medicinePool())},
			Notes:     []string{"Synthetic admission note: stable overnight, eating and drinking."},
		}
		p.Observations = stableSeries(r, 4)
		out = append(out, p)
	}
	return out
}

func syntheticNHSNumber(r *rand.Rand) string {
	for {
		nine := fmt.Sprintf("999%06d", r.IntN(1_000_000))
		if d := nhsCheckDigit(nine); d >= 0 {
			return fmt.Sprintf("%s%d", nine, d)
		}
	}
}

// stableSeries returns n observation sets that score NEWS2 0–2.
func stableSeries(r *rand.Rand, n int) []Observations {
	obs := make([]Observations, n)
	for i := range obs {
		obs[i] = Observations{
			RespirationRate: 14 + r.IntN(5),
			SpO2:            96 + r.IntN(4),
			SystolicBP:      115 + r.IntN(30),
			Pulse:           60 + r.IntN(25),
			Consciousness:   "A",
			TemperatureC:    float64(364+r.IntN(12)) / 10,
		}
	}
	return obs
}

// deteriorated returns observations that score NEWS2 ≥ 7: the
// CLINICAL_DETERIORATION injection.
func deteriorated() Observations {
	return Observations{RespirationRate: 26, SpO2: 91, SystolicBP: 98, Pulse: 124, Consciousness: "A", TemperatureC: 38.9}
}
