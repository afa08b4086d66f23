package custody_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/custody-dev/custody"
)

func TestForeignMeta(t *testing.T) {
	got := custody.ForeignMeta(map[string]any{"custody/receipt": "forged", "vendor/x": 1, "progressToken": "p"})
	if want := map[string]any{"vendor/x": 1, "progressToken": "p"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ForeignMeta = %v, want %v", got, want)
	}
	if got := custody.ForeignMeta(map[string]json.RawMessage{"custody/trace_id": json.RawMessage(`"t"`)}); got != nil {
		t.Errorf("only custody's keys, yet %v", got)
	}
	if got := custody.ForeignMeta(map[string]any(nil)); got != nil {
		t.Errorf("nil meta gave %v", got)
	}
}
