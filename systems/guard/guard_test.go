package guard_test

import (
	"reflect"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/guard"
)

func TestNumbers(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"Plain", "visibility 300 ft", []string{"300"}},
		{"Decimal", "0.50 crashes per minute", []string{"0.5"}},
		{"Thousands", "1,200 vehicles", []string{"1200"}},
		{"Date", "on 2015-01-09", []string{"2015", "1", "9"}},
		{"RoadID", "I-94:MM88-EB", []string{"94", "88"}},
		{"None", "no digits here", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guard.Numbers(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Numbers(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	// "Visibility" and "Drivers" open sentences and are common words;
	// "Toledo" opens one and is a name all the same.
	got := guard.Names("Visibility is low near Galesburg. Toledo saw worse. Drivers on I-94 near Kalamazoo: slow.")
	want := []string{"Galesburg", "Toledo", "Kalamazoo"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestWordCount(t *testing.T) {
	if n := guard.WordCount("  one two\nthree "); n != 3 {
		t.Errorf("WordCount = %d, want 3", n)
	}
}

func TestFactsChecks(t *testing.T) {
	facts := guard.NewFacts(`{"visibility_ft":300,"location_id":"I-94:MM88-EB"}`, "Compare Galesburg 2015 with snow.")
	tests := []struct {
		name    string
		check   guard.Check
		text    string
		keyword string // "" means the text passes
	}{
		{"NumberOK", facts.OnlyNumbers(), "visibility 300 ft on I-94", ""},
		{"NumberInvented", facts.OnlyNumbers(), "visibility 250 ft", "guard/number"},
		{"NameOK", facts.OnlyNames(), "as at Galesburg in 2015", ""},
		{"NameInvented", facts.OnlyNames(), "as near Toledo last year", "guard/name"},
		{"NameInventedOpeningSentence", facts.OnlyNames(), "Slow down. Toledo saw worse last year.", "guard/name"},
		{"NameOKOpeningSentence", facts.OnlyNames(), "Galesburg saw worse. Traffic is slowing.", ""},
		{"FieldOK", facts.OnlyFields(), "visibility_ft is low", ""},
		{"FieldInvented", facts.OnlyFields(), "humidity_pct is high", "guard/field"},
		{"TermOK", facts.OnlyTerms("snow", "humidity"), "snow falling", ""},
		{"TermInvented", facts.OnlyTerms("snow", "humidity"), "high humidity", "guard/term"},
		{"LengthOK", guard.MaxWords(3), "one two three", ""},
		{"LengthOver", guard.MaxWords(3), "one two three four", "guard/length"},
		{"CharsOver", guard.MaxChars(3), "four", "guard/length"},
		{"CitationOK", guard.RequireAny("Galesburg"), "like galesburg", ""},
		{"CitationMissing", guard.RequireAny("Galesburg"), "like nothing before", "guard/citation"},
		{"CitationNotRequired", guard.RequireAny(), "anything", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.text)
			if tt.keyword == "" {
				if err != nil {
					t.Fatalf("check(%q) = %v, want pass", tt.text, err)
				}
				return
			}
			e := custody.AsError(err)
			if err == nil || e.Kind != custody.EINVALID || len(e.Violations) == 0 || e.Violations[0].Keyword != tt.keyword {
				t.Fatalf("check(%q) = %v, want EINVALID with %s", tt.text, err, tt.keyword)
			}
		})
	}
}

func TestAllCollectsEveryViolation(t *testing.T) {
	facts := guard.NewFacts("visibility 300")
	err := guard.All(facts.OnlyNumbers(), guard.MaxWords(2))("visibility 250 and more")
	e := custody.AsError(err)
	if len(e.Violations) != 2 {
		t.Fatalf("violations = %+v, want 2", e.Violations)
	}
}
