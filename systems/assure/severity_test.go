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
