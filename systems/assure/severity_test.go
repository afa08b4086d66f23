package assure

import "testing"

func TestCountAtLeast(t *testing.T) {
	fs := []Finding{{Severity: "LOW"}, {Severity: "MEDIUM"}, {Severity: "HIGH"}, {Severity: "CRITICAL"}, {Severity: "UNHEARD-OF"}}
	tests := []struct {
		threshold string
		want      int
	}{
		{"low", 5}, {"MEDIUM", 4}, {"HIGH", 3}, {"CRITICAL", 2}, {"NONE", 0},
	}
	for _, tt := range tests {
		s, err := ParseSeverity(tt.threshold)
		if err != nil {
			t.Fatal(err)
		}
		if got := CountAtLeast(fs, s); got != tt.want {
			t.Errorf("at or above %s: %d, want %d (an unknown severity always counts)", tt.threshold, got, tt.want)
		}
	}
	if _, err := ParseSeverity("SEVERE"); err == nil {
		t.Error("ParseSeverity(SEVERE): want an error")
	}
}

func TestParseSeverity(t *testing.T) {
	tests := []struct {
		in   string
		want Severity
		err  bool
	}{
		{"LOW", SeverityLow, false},
		{" medium ", SeverityMedium, false},
		{"High", SeverityHigh, false},
		{"critical", SeverityCritical, false},
		{"none", SeverityNone, false},
		{"", "", true},
		{"SEVERE", "", true},
		{"LOW,HIGH", "", true},
	}
	for _, tt := range tests {
		got, err := ParseSeverity(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseSeverity(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	for i, s := range []Severity{SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical, SeverityNone} {
		if s.rank() != i+1 {
			t.Errorf("%s ranks %d, want %d", s, s.rank(), i+1)
		}
	}
	if CountAtLeast(nil, SeverityLow) != 0 {
		t.Error("no findings counted")
	}
}
