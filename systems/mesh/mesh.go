// Package mesh runs the T5 wildfire mesh pods of seed 000 on the custody
// core: forward nodes that turn sensor readings into advisories with a
// deterministic fire-weather rule, an aggregator that synthesises the
// latest advisories of many nodes, and an operator desk where a human
// approves a wide-area broadcast.
//
// Every message is validated against its $defs contract before it is sent
// and when it is received; a message that fails is refused and recorded on
// the evidence ledger, never forwarded. Every decision (tier, severity,
// escalation, approval) is deterministic: a composer only words it, and a
// guard check keeps the words from contradicting the decision.
package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
)

// Contract refs of the three mesh messages and their parts in seed 000.
const (
	contractID     = "https://peas.local/schemas/v0/tools.json"
	advisoryRef    = contractID + "#/$defs/peas_mesh_advisory_v1"
	aggregationRef = contractID + "#/$defs/peas_mesh_aggregation_v1"
	broadcastRef   = contractID + "#/$defs/peas_mesh_broadcast_v1"
)

// Schema versions carried in each message's schema_version.
const (
	advisoryVersion    = "PEAS-MESH-ADVISORY-v1"
	aggregationVersion = "PEAS-MESH-AGGREGATION-v1"
	broadcastVersion   = "PEAS-MESH-BROADCAST-v1"
)

// maxMessageBytes bounds the serialised size of an advisory and an
// aggregation (NFR-T5.2, NFR-T5.3); broadcasts are held to it too.
const maxMessageBytes = 2048

// Audiences are the named broadcast audiences of the v1 contract, in the
// contract's order.
var audiences = [...]string{
	"ground_crew_alpha",
	"ground_crew_bravo",
	"ground_crew_charlie",
	"ops_center",
	"evacuation_route_signage",
}

// Audiences returns the named broadcast audiences of the v1 contract.
func Audiences() []string { return append([]string(nil), audiences[:]...) }

// validAudience reports whether a is one of the contract's audiences.
func validAudience(a string) bool {
	for _, x := range audiences {
		if x == a {
			return true
		}
	}
	return false
}

// Validator validates raw bytes against a schema ref; contract.Registry
// implements it. Validate returns nil or an *custody.Error of kind
// EINVALID carrying the violations.
type Validator interface {
	Validate(ref string, raw []byte) error
}

// Recorder appends evidence; custody.Ledger implements it. Append and
// Commit must not return until the entry is durable; Commit writes the
// entry and the state changes it is the evidence of in one commit, or
// neither (see custody.Ledger).
type Recorder interface {
	Append(ctx context.Context, e custody.Entry) (custody.Entry, error)
	Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error)
}

// Position is a forward node's fixture position: an MGRS string with an
// optional latitude and longitude.
type Position struct {
	MGRS         string   `json:"mgrs"`
	Lat          *float64 `json:"lat,omitempty"`
	Lon          *float64 `json:"lon,omitempty"`
	UncertaintyM *float64 `json:"uncertainty_m,omitempty"`
}

// SensorReading is one mesh_sensor_reading. A nil field is a sensor that
// gave no reading this cycle.
type SensorReading struct {
	ThermalMaxC          *float64 `json:"thermal_max_c,omitempty"`
	ThermalAreaM2        *float64 `json:"thermal_area_m2,omitempty"`
	ThermalAnomalyPixels *int     `json:"thermal_anomaly_pixels,omitempty"`
	AmbientC             *float64 `json:"ambient_c,omitempty"`
	HumidityPct          *float64 `json:"humidity_pct,omitempty"`
	WindSpeedMS          *float64 `json:"wind_speed_ms,omitempty"`
	WindGustMS           *float64 `json:"wind_gust_ms,omitempty"`
	WindDirDeg           *float64 `json:"wind_dir_deg,omitempty"`
}

// DetectorState is the output of the deterministic rule (mesh_detector_state).
type DetectorState struct {
	Tier             Tier     `json:"tier"`
	RuleSignature    string   `json:"rule_signature"`
	WFIGSProximityKM *float64 `json:"wfigs_proximity_km,omitempty"`
	RFWActive        *bool    `json:"rfw_active,omitempty"`
}

// ComposerSignature names what composed a text (mesh_composer_signature).
type ComposerSignature struct {
	Model   string   `json:"model"`
	Adapter *string  `json:"adapter,omitempty"`
	WallS   *float64 `json:"wall_s,omitempty"`
}

// Advisory is a PEAS-MESH-ADVISORY-v1 message from one forward node.
type Advisory struct {
	SchemaVersion     string            `json:"schema_version"`
	NodeID            string            `json:"node_id"`
	Position          Position          `json:"position"`
	ObservationTS     string            `json:"observation_ts"`
	SensorReading     SensorReading     `json:"sensor_reading"`
	DetectorState     DetectorState     `json:"detector_state"`
	AdvisoryText      string            `json:"advisory_text"`
	ComposerSignature ComposerSignature `json:"composer_signature"`
}

// Aggregation is a PEAS-MESH-AGGREGATION-v1 message across forward nodes.
type Aggregation struct {
	SchemaVersion     string             `json:"schema_version"`
	AggregationTS     string             `json:"aggregation_ts"`
	InputNodeIDs      []string           `json:"input_advisory_node_ids"`
	AggregationText   string             `json:"aggregation_text"`
	SeverityTier      Tier               `json:"severity_tier"`
	SpatialExtentBBox []float64          `json:"spatial_extent_bbox,omitempty"`
	StaleNodeIDs      []string           `json:"stale_node_ids,omitempty"`
	ApprovalRequestID string             `json:"approval_request_id"`
	ComposerSignature *ComposerSignature `json:"composer_signature,omitempty"`
}

// Broadcast is a PEAS-MESH-BROADCAST-v1 message: the approved actuation.
type Broadcast struct {
	SchemaVersion     string   `json:"schema_version"`
	BroadcastTS       string   `json:"broadcast_ts"`
	ApprovalRequestID string   `json:"approval_request_id"`
	OperatorID        string   `json:"operator_id"`
	BroadcastText     string   `json:"broadcast_text"`
	SeverityTier      Tier     `json:"severity_tier"`
	TargetAudience    []string `json:"target_audience"`
}

// Float returns a pointer to v, for the optional fields of a message.
func Float(v float64) *float64 { return &v }

// Bool returns a pointer to v, for the optional fields of a message.
func Bool(v bool) *bool { return &v }

// marshal encodes a message without HTML escaping, so that the bytes on
// the wire read as the text was composed.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
