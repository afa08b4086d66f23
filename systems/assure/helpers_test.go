package assure

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody"
)

func readFile(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func callOf(trace, args string) custody.Call {
	return custody.Call{Trace: trace, Tool: "get_patient", Args: json.RawMessage(args)}
}
