package bench

import (
	"encoding/json"
	"testing"
)

// TestSampleEntry checks that the sample is a valid JSON body that differs
// from writer to writer and call to call, as real calls do.
func TestSampleEntry(t *testing.T) {
	a, b, c := SampleEntry(0, 1), SampleEntry(0, 2), SampleEntry(1, 1)
	for _, e := range []struct {
		name string
		body []byte
	}{{"0/1", a.Body}, {"0/2", b.Body}, {"1/1", c.Body}} {
		if !json.Valid(e.body) {
			t.Errorf("%s: body is not JSON: %s", e.name, e.body)
		}
	}
	if string(a.Body) == string(b.Body) || string(a.Body) == string(c.Body) {
		t.Errorf("bodies repeat: %s, %s, %s", a.Body, b.Body, c.Body)
	}
	if a.Refs["approval_request_id"] == b.Refs["approval_request_id"] {
		t.Errorf("refs repeat: %v", a.Refs)
	}
}
