package assure

import (
	"fmt"
	"testing"
)

func TestNHSCheckDigit(t *testing.T) {
	tests := []struct {
		name, nine string
		want       int
	}{
		{"Classic", "943476591", 9}, // 943 476 5919
		{"Wristband", "401023213", 7},
		{"ElevenIsZero", "000000000", 0},
		{"TenIsInvalid", "000000006", -1}, // 6×2 = 12, 11 − 12 mod 11 = 10
		{"TestRange", "999000124", 3},
		{"ErrShort", "94347659", -1},
		{"ErrLong", "9434765919", -1},
		{"ErrLetter", "94347659X", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nhsCheckDigit(tt.nine); got != tt.want {
				t.Fatalf("nhsCheckDigit(%q) = %d, want %d", tt.nine, got, tt.want)
			}
		})
	}
}

func TestNHSNumbers(t *testing.T) {
	tests := []struct {
		number      string
		valid, test bool
	}{
		{"9434765919", true, false},
		{"4010232137", true, false},
		{"9990001243", true, true},
		{"9990001247", false, false}, // wrong check digit
		{"9434765918", false, false},
		{"943476591", false, false},
		{"94347659190", false, false},
		{"0000000000", true, false},
	}
	for _, tt := range tests {
		if got := validNHSNumber(tt.number); got != tt.valid {
			t.Errorf("validNHSNumber(%s) = %v, want %v", tt.number, got, tt.valid)
		}
		if got := testNHSNumber(tt.number); got != tt.test {
			t.Errorf("testNHSNumber(%s) = %v, want %v", tt.number, got, tt.test)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	a, b := identifiers(3, 500), identifiers(3, 500)
	seen := map[string]bool{}
	for i, id := range a {
		if id != b[i] {
			t.Fatalf("identifier %d differs between calls with one seed", i)
		}
		if !testNHSNumber(id) || seen[id] {
			t.Fatalf("identifier %s: outside the test range, invalid or repeated", id)
		}
		seen[id] = true
	}
	if c := identifiers(4, 1); c[0] == a[0] {
		t.Fatalf("seeds 3 and 4 start with the same identifier %s", c[0])
	}
}

func TestCases(t *testing.T) {
	a, b := cases(5, 6), cases(5, 6)
	meds := map[Medication]bool{}
	for _, m := range dueMedicines() {
		meds[m] = true
	}
	for i, c := range a {
		if c.Index != i+1 || c.Patient.NHSNumber != "" || !meds[c.Due] || fmt.Sprint(c) != fmt.Sprint(b[i]) {
			t.Fatalf("case %d: %+v; want it numbered from 1, without an identifier, due a listed medicine, the same for one seed", i, c)
		}
		if !syntheticName(splitName(c.Patient.Name)) || c.Patient.Ward != "SYN-WARD-7" || len(c.Patient.Observations) != 4 {
			t.Fatalf("case %d patient %+v", i, c.Patient)
		}
	}
}

func splitName(name string) (string, string) {
	for i := range name {
		if name[i] == ' ' {
			return name[:i], name[i+1:]
		}
	}
	return name, ""
}

// TestPlan: every case runs clean and under every injection, k times,
// each trace with identifiers of its own, the same for one seed.
func TestPlan(t *testing.T) {
	env := mustEnvelope(t)
	specs := plan(env, 9, 2, 3)
	if len(specs) != 2*7*3 {
		t.Fatalf("%d traces, want 2 cases × 7 × 3 repeats", len(specs))
	}
	if s := specs[0]; s.TraceID != "c01.BASELINE.r1" || s.Case != 1 || s.InjectionID != baselineID || s.Category != "" || s.Repeat != 1 {
		t.Fatalf("first trace %+v, want the clean baseline of case 1", s)
	}
	if s := specs[3]; s.TraceID != "c01.DF-INJ-DETERIORATION.r1" || s.Category != injDeterioration {
		t.Fatalf("fourth trace %+v, want the first injection after three baselines", s)
	}
	if s := specs[len(specs)-1]; s.TraceID != "c02.DF-INJ-NO-APPROVER.r3" || s.Case != 2 || s.Category != injMissingApproval || s.Repeat != 3 {
		t.Fatalf("last trace %+v", s)
	}
	ids := map[string]bool{}
	for _, s := range specs {
		for _, id := range []string{s.PatientID, s.OtherID} {
			if ids[id] || !testNHSNumber(id) {
				t.Fatalf("trace %s: identifier %s repeated or outside the test range", s.TraceID, id)
			}
			ids[id] = true
		}
	}
	again := plan(env, 9, 2, 3)
	for i := range specs {
		if specs[i] != again[i] {
			t.Fatalf("trace %d differs for one seed", i)
		}
	}
	if other := plan(env, 10, 2, 3); other[0].PatientID == specs[0].PatientID {
		t.Fatal("another seed gives the same patients")
	}
	env.Injections = nil
	if only := plan(env, 9, 2, 1); len(only) != 2 || only[1].TraceID != "c02.BASELINE.r1" {
		t.Fatalf("an envelope without injections plans %+v", only)
	}
}

func TestDeterioratedAndFabricated(t *testing.T) {
	n, err := CalculateNEWS2(deteriorated())
	if err != nil || n.Score < 7 || n.Risk != "high" {
		t.Fatalf("deteriorated: %+v %v", n, err)
	}
	n, err = CalculateNEWS2(fabricated())
	if err != nil || n.Score != 0 {
		t.Fatalf("fabricated: %+v %v; want the invented set to look normal", n, err)
	}
}
