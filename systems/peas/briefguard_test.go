package peas

import (
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestBrief(t *testing.T) {
	sig := `{"severity":"critical","location_id":"I-94:MM88-EB","contributing_factors":["visibility 300 ft < 500 ft"],"sensor_snapshot":{"visibility_ft":300,"precipitation_type":"snow","wind_mph":35}}`
	cmp := `[{"label":"I-94 Galesburg 2015-01-09 whiteout pile-up (~193 vehicles, 1 fatality)","summary":"Whiteout in lake-effect snow near Galesburg, Michigan."}]`
	tmpl := "CRITICAL pile-up signature at I-94:MM88-EB. Visibility 300 ft. Compare Galesburg, Michigan."
	check := briefGuard{Signature: sig, Comparisons: cmp, Template: tmpl, Citations: []string{"Galesburg"}}.check()
	tests := []struct {
		name    string
		text    string
		keyword string
	}{
		{"Template", tmpl, ""},
		{"Restated", "Visibility at I-94:MM88-EB is 300 ft in snow with wind; like Galesburg in 2015 (193 vehicles).", ""},
		{"InventedNumber", "Visibility is 120 ft; like Galesburg.", "guard/number"},
		{"InventedPlace", "Conditions match those near Toledo and Galesburg.", "guard/name"},
		{"InventedField", "The road_surface_temp is low; like Galesburg.", "guard/field"},
		{"InventedMeasurement", "High humidity; like Galesburg.", "guard/term"},
		{"DroppedCitation", "Visibility 300 ft in snow.", "guard/citation"},
		{"TooLong", strings.Repeat("snow ", 201) + "Galesburg", "guard/length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(tt.text)
			if tt.keyword == "" {
				if err != nil {
					t.Fatalf("brief refused: %v", err)
				}
				return
			}
			for _, v := range custody.AsError(err).Violations {
				if v.Keyword == tt.keyword {
					return
				}
			}
			t.Fatalf("brief %q: got %v, want a %s violation", tt.text, err, tt.keyword)
		})
	}
}
