package contract_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody/contract"
)

var updateSeedNames = flag.Bool("update-seed-names", false, "rewrite testdata/seeds/registry.json")

// TestSeedCopiesRegistry writes down what the seed copies this package's
// tests load become in a registry: their contracts and named schemas.
// systems/seeds_test.go holds the owners' contracts to the same file, so
// the tests here speak for the contracts custody serves, without the
// core importing a system.
func TestSeedCopiesRegistry(t *testing.T) {
	reg, err := contract.Load(contract.Options{Contracts: contract.SeedsForTest(t)})
	if err != nil {
		t.Fatalf("load copies: %v", err)
	}
	got, err := json.MarshalIndent(map[string]any{"contracts": reg.Contracts(), "named": reg.Named()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "seeds", "registry.json")
	if *updateSeedNames {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-seed-names)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the seed copies' registry differs from %s (run with -update-seed-names)", golden)
	}
	if len(reg.Named()) != 48 {
		t.Errorf("the copies name %d schemas, want 48", len(reg.Named()))
	}
}
