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
		{"ErrRealNHSNumberDashes", "ref 943-476-5919", "nhs_number"},
		{"ErrISODate", "John Smith 1948-03-14 M1 1AE", "name_dob_postcode"},
		{"OKNameAndDOBWithoutPostcode", "Margaret Thompson, DOB 14/03/1948.", ""},
		{"OKNameAndPostcodeWithoutDOB", "Margaret Thompson lives at LS6 2AB.", ""},
		{"OKDOBAndPostcodeWithoutName", "born 14/03/1948, lives at LS6 2AB", ""},
		{"OKSyntheticFamily", "Margaret Subject-E, DOB 14/03/1948, LS6 2AB.", ""},
		{"ErrDoubleBarrelled", "Anne Smith-Jones, DOB 14/03/1948, LS6 2AB.", "name_dob_postcode"},
		{"OKLongerNumber", "order 94347659190 placed", ""},
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

// TestScanFindsEvery: each identifiable item is a hit of its own, with
// the text that matched.
func TestScanFindsEvery(t *testing.T) {
	hits := newScanner().Scan("NHS 943 476 5919 and 4010232137; Margaret Thompson 14/03/1948 LS6 2AB")
	want := []Identifiable{
		{Kind: "nhs_number", Match: "943 476 5919"},
		{Kind: "nhs_number", Match: "4010232137"},
		{Kind: "name_dob_postcode", Match: "Margaret Thompson / 14/03/1948 / LS6 2AB"},
	}
	if len(hits) != len(want) {
		t.Fatalf("hits %v, want %v", hits, want)
	}
	for i := range want {
		if hits[i] != want[i] {
			t.Errorf("hit %d = %v, want %v", i, hits[i], want[i])
		}
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
