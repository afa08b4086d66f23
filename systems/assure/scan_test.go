package assure

import "testing"

func TestScanner(t *testing.T) {
	s := newScanner()
	tests := []struct {
		name, text string
		want       string // kind of the first hit, "" for none
	}{
		{"OKTestRange", "Patient 9990001247 reviewed.", ""},
		{"OKInvalidChecksum", "Reference 4010232138 logged.", ""},
		{"OKSyntheticName", "Test Patient-A, born 01/02/1950, SW1A 1AA (synthetic).", ""},
		{"OKDateOnly", "Reviewed on 2026-01-05 by the ward team.", ""},
		{"ErrRealNHSNumber", "NHS number 401 023 2137 on the wristband.", "nhs_number"},
		{"ErrRealNHSNumberPlain", "id=4010232137", "nhs_number"},
		{"ErrNameDOBPostcode", "Margaret Thompson, DOB 14/03/1948, lives at LS6 2AB.", "name_dob_postcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := s.Scan(tt.text)
			got := ""
			if len(hits) > 0 {
				got = hits[0].Kind
			}
			if got != tt.want {
				t.Fatalf("Scan(%q) = %v, want kind %q", tt.text, hits, tt.want)
			}
		})
	}
}

func TestGenerateIsSyntheticAndDeterministic(t *testing.T) {
	a, b := generate(42, 20), generate(42, 20)
	s := newScanner()
	for i := range a {
		if a[i].NHSNumber != b[i].NHSNumber || a[i].Name != b[i].Name {
			t.Fatalf("patient %d differs between runs with one seed", i)
		}
		if !testNHSNumber(a[i].NHSNumber) {
			t.Fatalf("patient %d has %s, outside the test range or invalid", i, a[i].NHSNumber)
		}
		if hits := s.Scan(a[i].Name + " " + a[i].NHSNumber); len(hits) > 0 {
			t.Fatalf("synthetic patient flagged: %v", hits)
		}
		for _, o := range a[i].Observations {
			if n, err := CalculateNEWS2(o); err != nil || n.Score > 2 {
				t.Fatalf("baseline observations score %d (%v)", n.Score, err)
			}
		}
	}
	if n, _ := CalculateNEWS2(deteriorated()); n.Score < 7 {
		t.Fatalf("deteriorated observations score %d, want ≥ 7", n.Score)
	}
}
