package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// TestHugeExponentRefused feeds a number whose exponent the validator's
// exact arithmetic cannot hold: it is refused with a clear message, and
// validation neither panics nor lets it through.
func TestHugeExponentRefused(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	for _, doc := range []string{
		`{"tier":"info","rule_signature":"rule","wfigs_proximity_km":1e10000000}`,
		`{"tier":"info","rule_signature":"rule","wfigs_proximity_km":-2.5E+99999}`,
	} {
		err := r.Validate("peas:mesh_detector_state", []byte(doc))
		var ce *custody.Error
		if !errors.As(err, &ce) || ce.Kind != custody.EINVALID || !strings.Contains(ce.Message, "exponent") {
			t.Errorf("Validate(%s) = %v, want EINVALID naming the exponent", doc, err)
		}
	}
	// Five digits of which the first are zeros make a small exponent.
	for _, n := range []string{`1e3`, `1e0003`, `0E00000`, `2.5e-000001`} {
		doc := `{"tier":"info","rule_signature":"rule","wfigs_proximity_km":` + n + `}`
		if err := r.Validate("peas:mesh_detector_state", []byte(doc)); err != nil {
			t.Errorf("the exponent of %s is refused: %v", n, err)
		}
	}
	err := r.Validate("peas:mesh_detector_state", []byte(`{"tier":"info","rule_signature":"rule","wfigs_proximity_km":1e000010000}`))
	if err == nil || !strings.Contains(err.Error(), "exponent") {
		t.Errorf("a five-significant-digit exponent behind zeros: %v, want refused", err)
	}
}
