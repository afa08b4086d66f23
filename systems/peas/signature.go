package peas

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/custody-dev/custody"
)

// DetectInput is detect_pileup_signature's input.
type DetectInput struct {
	LocationID    string          `json:"location_id"`
	SensorWindowS int             `json:"sensor_window_s,omitempty"`
	Readings      json.RawMessage `json:"sensor_readings"`
}

// Signature is the contract's shared signature object. SensorSnapshot holds
// the readings exactly as they were given.
type Signature struct {
	SignatureID         string          `json:"signature_id"`
	LocationID          string          `json:"location_id"`
	DetectedAt          string          `json:"detected_at"`
	Severity            string          `json:"severity"`
	Confidence          float64         `json:"confidence"`
	ContributingFactors []string        `json:"contributing_factors"`
	SensorSnapshot      json.RawMessage `json:"sensor_snapshot,omitempty"`
}

// DetectOutput is detect_pileup_signature's output.
type DetectOutput struct {
	Signature Signature `json:"signature"`
	Reasoning string    `json:"reasoning"`
}

// signatureRecord is what the detector keeps of each signature it made.
type signatureRecord struct {
	Signature Signature `json:"signature"`
	Trace     string    `json:"trace"`
}

// Evaluate runs the detector on one input: the pure core of
// detect_pileup_signature, shared by the tool and the CLI.
func Evaluate(in DetectInput, id, detectedAt string) (DetectOutput, error) {
	var r Readings
	if err := decodeJSON(in.Readings, "sensor_readings", &r); err != nil {
		return DetectOutput{}, err
	}
	d := Detect(r)
	factors := make([]string, 0, len(d.Factors))
	for _, f := range d.Factors {
		factors = append(factors, f.Text)
	}
	if len(factors) == 0 {
		factors = []string{"no threshold crossed"}
	}
	return DetectOutput{
		Signature: Signature{
			SignatureID: id, LocationID: in.LocationID, DetectedAt: detectedAt,
			Severity: d.Severity, Confidence: d.Confidence, ContributingFactors: factors,
			SensorSnapshot: in.Readings,
		},
		Reasoning: reasoning(r, d),
	}, nil
}

// reasoning cites every input field by name and value and says why the
// severity follows.
func reasoning(r Readings, d Detection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "crash_density_per_min=%s (factor above 0.5), visibility_ft=%d (factor below 500), ", num(r.CrashDensityPerMin), r.VisibilityFt)
	fmt.Fprintf(&b, "ambient_temp_f=%s with precipitation_type=%s (freeze factor at or below 34 with snow, sleet or freezing rain), ", num(r.AmbientTempF), orNone(r.PrecipitationType))
	fmt.Fprintf(&b, "traffic_speed_mph=%s (stopping sight distance %.0f ft)", num(r.TrafficSpeedMPH), d.SSDFt)
	if r.WindMPH != nil {
		fmt.Fprintf(&b, ", wind_mph=%s (blowing snow at or above 30 with snow)", num(*r.WindMPH))
	}
	names := make([]string, 0, len(d.Factors))
	for _, f := range d.Factors {
		names = append(names, f.Name)
	}
	fmt.Fprintf(&b, ". Factors holding: %s. Severity %s by rule (critical: crash with another factor; warn: two or more other factors), confidence %.3f.",
		orNone(strings.Join(names, ", ")), d.Severity, d.Confidence)
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// detect is the detect_pileup_signature handler.
func (s *System) detect(ctx context.Context, call custody.Call) (json.RawMessage, error) {
	var in DetectInput
	if err := decodeArgs(call, &in); err != nil {
		return nil, err
	}
	out, err := Evaluate(in, s.d.NewID(), custody.FormatTime(s.now()))
	if err != nil {
		return nil, err
	}
	rec := signatureRecord{Signature: out.Signature, Trace: call.Trace}
	if err := s.putDoc(ctx, NSSignatures, out.Signature.SignatureID, rec); err != nil {
		return nil, err
	}
	return output(out)
}
