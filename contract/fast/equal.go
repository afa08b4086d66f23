package fast

import (
	"encoding/json"

	"github.com/custody-dev/custody/internal/strictjson"
)

// maxUniqueItems bounds the arrays whose uniqueItems the fast path checks
// (pairwise, as the library does for short arrays); longer ones are unsure.
const maxUniqueItems = 256

// equalValues compares two decoded JSON values as the library's equality
// does (objects by members, arrays in order, numbers by exact value),
// answering unsure where a number is beyond the fast path.
func equalValues(a, b any) verdict {
	switch a := a.(type) {
	case map[string]any:
		return equalObjects(a, b)
	case []any:
		return equalArrays(a, b)
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return fail
		}
		return sameNumber(string(a), string(bn))
	case string:
		bs, ok := b.(string)
		return verdictOf(ok && a == bs)
	case bool:
		bb, ok := b.(bool)
		return verdictOf(ok && a == bb)
	case nil:
		return verdictOf(b == nil)
	}
	return unsure
}

func equalObjects(a map[string]any, b any) verdict {
	bo, ok := b.(map[string]any)
	if !ok || len(a) != len(bo) {
		return fail
	}
	for k, av := range a {
		bv, ok := bo[k]
		if !ok {
			return fail
		}
		if v := equalValues(av, bv); v != pass {
			return v
		}
	}
	return pass
}

func equalArrays(a []any, b any) verdict {
	ba, ok := b.([]any)
	if !ok || len(a) != len(ba) {
		return fail
	}
	for i := range a {
		if v := equalValues(a[i], ba[i]); v != pass {
			return v
		}
	}
	return pass
}

// uniqueItems checks that no two items of the array text raw, already
// read as strict JSON, are equal.
func uniqueItems(raw []byte) verdict {
	v, err := strictjson.Decode(raw)
	arr, ok := v.([]any)
	if err != nil || !ok || len(arr) > maxUniqueItems {
		return unsure
	}
	out := pass
	for i := 1; i < len(arr); i++ {
		for j := range i {
			switch equalValues(arr[i], arr[j]) {
			case pass:
				return fail
			case unsure:
				out = unsure
			}
		}
	}
	return out
}
