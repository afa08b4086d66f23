package mesh

import (
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestAdvisoryGuard(t *testing.T) {
	tests := []struct {
		name, tier, text string
		ok               bool
	}{
		{"InfoClear", "info", "Tier info at forward-ridge-1: conditions clear.", true},
		{"InfoMentionsFire", "info", "Tier info, but fire on the ridge.", false},
		{"InfoNegatedSmoke", "info", "Tier info: no smoke seen.", false},
		{"InfoEvacuation", "info", "Tier info. Evacuation routes open.", false},
		{"InfoNodeNameWithFire", "info", "Tier info at forward-firewatch-2: conditions clear.", true},
		{"InfoClaimsWarning", "info", "Tier info, warning issued.", false},
		{"CriticalWithFire", "critical", "Tier critical: active fire detected.", true},
		{"CriticalCitesLowerTier", "critical", "Tier critical, raised from warning.", true},
		{"WarningClaimsEmergency", "warning", "Tier warning, expect emergency soon.", false},
		{"MissingTier", "warning", "Hot spot detected near the node.", false},
		{"UnknownTier", "severe", "Tier severe.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := advisoryGuard(tt.tier)(tt.text)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && custody.ErrorKind(err) != custody.EINVALID {
				t.Fatalf("kind = %s", custody.ErrorKind(err))
			}
		})
	}
}

func TestAggregationGuard(t *testing.T) {
	reported := map[string]string{"forward-a-1": "critical", "forward-a-2": "info", "forward-a-12": "warning"}
	allInfo := map[string]string{"forward-a-1": "info", "forward-a-2": "info"}
	tests := []struct {
		name     string
		reported map[string]string
		severity string
		text     string
		ok       bool
	}{
		{"CitesWhatNodesSaid", reported, "critical", "Severity critical. forward-a-1 (critical), forward-a-12 (warning), forward-a-2 (info).", true},
		{"StaleCapped", reported, "warning", "Severity warning. forward-a-1 (stale; last critical, capped to warning).", true},
		{"UnknownNode", reported, "critical", "forward-a-1 (critical) and forward-a-3 (critical).", false},
		{"WrongTierCited", reported, "critical", "forward-a-2 (critical) reports.", false},
		{"PrefixNodeWrongTier", reported, "critical", "forward-a-12 (critical) reports.", false},
		{"NoCitation", reported, "critical", "Severity critical across the sector today.", false},
		{"NamesUnreportedTier", reported, "critical", "forward-a-1 (critical); expect emergency.", false},
		{"SeverityAboveInputs", reported, "emergency", "forward-a-1 (critical).", false},
		{"AllInfoClear", allInfo, "info", "Severity info. forward-a-1 (info), forward-a-2 (info).", true},
		{"AllInfoMentionsSmoke", allInfo, "info", "Severity info. forward-a-1 (info) sees smoke.", false},
		{"AllInfoSeverityWarning", allInfo, "warning", "forward-a-1 (info).", false},
		{"NoInputs", map[string]string{}, "info", "forward-a-1 (info).", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := aggregationGuard(tt.reported, tt.severity)(tt.text); (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestBroadcastGuard(t *testing.T) {
	agg := "Sector 11SKU, 12 nodes, severity emergency. Reported: forward-r-1 (emergency), forward-r-2 (critical); 10 more nodes report info."
	tests := []struct {
		name, tier, text string
		// operator holds the words the operator wrote themselves.
		operator string
		ok       bool
	}{
		{"Repeats", "emergency", agg, "", true},
		{"Shortens", "critical", "forward-r-1 (emergency), forward-r-2 (critical).", "", true},
		{"SoftensTierWord", "warning", "Sector 11SKU: 12 nodes reported.", "", true},
		{"NewNode", "critical", "forward-r-1 (emergency), forward-r-7 (critical).", "", false},
		{"NewNumber", "critical", "forward-r-1 (emergency), 40 acres.", "", false},
		{"NewClaim", "critical", "forward-r-1 (emergency). Evacuate now.", "", false},
		{"NewHazard", "critical", "Smoke reported by forward-r-1 (emergency).", "", false},
		{"NewTierWord", "warning", "Sector 11SKU, warning issued.", "", false},
		{"InfoTier", "info", "Sector 11SKU, 12 nodes.", "", false},
		{"LoweredButStatesHigher", "critical", "Sector 11SKU, severity emergency.", "", false},
		{"OperatorClaim", "critical", "forward-r-1 (emergency). Evacuate Pine Valley now.", "Evacuate Pine Valley now.", true},
		{"ClaimBeyondOperatorWords", "critical", "forward-r-1 (emergency). Evacuate Pine Valley now, fire spreading.", "Evacuate Pine Valley now,", false},
		{"OperatorNumber", "critical", "forward-r-1 (emergency). Evacuate by Route 74.", "Evacuate by Route 74.", false},
		{"OperatorNode", "critical", "forward-r-1 (emergency). Evacuate near forward-r-7.", "Evacuate near forward-r-7.", false},
		{"OperatorTierWord", "critical", "forward-r-1 (emergency). Warning: evacuate.", "Warning: evacuate.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := broadcastGuard(agg, tt.operator, tt.tier)(tt.text); (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestMeshAdvisoryMessages pins which word each refusal names: the lowest
// higher tier, and at info the least hazard word in byte order, with
// letters lowercased and node ids skipped.
func TestMeshAdvisoryMessages(t *testing.T) {
	tests := []struct {
		name, tier, text, want string
	}{
		{"LowestHigherTier", "info", "Tier info; emergency, critical and WARNING words.", `mesh advisory text refused: text names tier "warning" above the detector tier "info"`},
		{"LeastHazardWord", "info", "Tier info. Smoke, EMBERS and burning seen.", `mesh advisory text refused: info advisory mentions "burning"`},
		{"HazardInsideToken", "info", "Tier info at post-FIRE3 camp.", `mesh advisory text refused: info advisory mentions "fire"`},
		{"CapitalisedNodePrefixIsText", "info", "Tier info at Forward-fire-1.", `mesh advisory text refused: info advisory mentions "fire"`},
		{"LongWord", "info", "Tier info: " + strings.Repeat("z", 40) + "fire and firebreak" + strings.Repeat("a", 40) + ".", `mesh advisory text refused: info advisory mentions "firebreak` + strings.Repeat("a", 40) + `"`},
		{"TierInsideLongerWordIsNotTier", "warning", "Tier warnings only.", `mesh advisory text refused: text does not state its tier "warning"`},
		{"NonASCIISeparates", "info", "Tier info—fire\u00a0ahead.", `mesh advisory text refused: info advisory mentions "fire"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := advisoryGuard(tt.tier)(tt.text)
			if err == nil || custody.AsError(err).Message != tt.want {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
		})
	}
	for _, text := range []string{"Tier info at forward-fire-1: clear.", "TIER INFO, conditions clear."} {
		if err := advisoryGuard("info")(text); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
	}
}
