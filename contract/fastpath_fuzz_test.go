package contract

import (
	"testing"
)

// fuzzSeeds are valid documents for some named schemas, from which the
// fuzzer mutates; every named schema also starts from "{}".
var fuzzSeeds = []struct{ name, doc string }{
	{"peas:notify_driver/output", `{"notification_id": "3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f", "delivered_at": "2026-08-14T21:04:00.25+02:00",
		"warning_text_shown": "Pile-up ahead, slow down", "audio_uri": "https://cdn.example/a%20b.mp3",
		"reasoning": "Detector tier critical at MM85 EB; approval granted by operator."}`},
	{"peas:mesh_sensor_reading", `{"thermal_anomaly_pixels": 123456789012345678901234567890, "humidity_pct": 100, "wind_dir_deg": 0.5}`},
	{"peas:mesh_detector_state", `{"tier": "info", "rule_signature": "rule", "wfigs_proximity_km": 0}`},
	{"peas:mgrs_position", `{"mgrs": "11SKU1234567890", "lat": -90, "lon": 180, "uncertainty_m": 1e2}`},
	{"peas:uuid_v4", `"3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f"`},
	{"peas:iso_timestamp", `"2026-12-31T23:59:60Z"`},
	{"peas:tier_enum", `"emergency"`},
}

// FuzzFastPathAgrees mutates documents against every named seed schema:
// whatever the fast path accepts must be strict JSON that the library
// accepts too.
func FuzzFastPathAgrees(f *testing.F) {
	r := mustLoad(f, Options{})
	named := r.Named()
	index := map[string]int{}
	for i, n := range named {
		index[n.Name] = i
		f.Add(uint16(i), []byte(`{}`))
	}
	for _, bc := range benchCases {
		f.Add(uint16(index[bc.ref]), readTestdata(f, bc.file))
	}
	for _, s := range fuzzSeeds {
		f.Add(uint16(index[s.name]), []byte(s.doc))
	}
	f.Fuzz(func(t *testing.T, which uint16, doc []byte) {
		n := named[int(which)%len(named)]
		s, err := r.schema(n.URI)
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil || !r.fastAccepts(s.fast, doc) {
			return
		}
		v, err := decode(doc)
		if err != nil {
			t.Fatalf("%s: fast path accepts %q, which does not decode: %v", n.Name, doc, err)
		}
		if err := s.lib.Validate(v); err != nil {
			t.Fatalf("%s: fast path accepts %q, which the library refuses: %v", n.Name, doc, err)
		}
	})
}
