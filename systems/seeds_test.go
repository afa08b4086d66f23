package systems_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/assure"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/peas"
)

// seedCopies is where the contract package's tests keep their copies of
// the seed contracts, and the registry those copies make.
var seedCopies = filepath.Join("..", "contract", "testdata", "seeds")

// TestSeedSourcesAgree proves that the seed copies the contract
// package's tests load are the systems' contracts byte for byte and make
// the same registry (contract/seeds_ext_test.go writes it down), so the
// tests there speak for the contracts custody serves.
func TestSeedSourcesAgree(t *testing.T) {
	list := systems.List{peas.Plugin{}, mesh.Plugin{}, brain.Plugin{}, assure.Plugin{}}
	owned := append(list.Contracts(), gate.EnvelopeContract())
	if len(owned) != 3 {
		t.Fatalf("%d seed contracts, want 3", len(owned))
	}
	for _, s := range owned {
		raw, err := os.ReadFile(filepath.Join(seedCopies, s.File))
		if err != nil {
			t.Fatalf("the copy of %s: %v", s.File, err)
		}
		if !bytes.Equal(s.Raw, raw) {
			t.Errorf("%s: the owner has %d bytes, the copy %d, and they differ", s.File, len(s.Raw), len(raw))
		}
	}
	reg, err := contract.Load(contract.Options{Contracts: owned})
	if err != nil {
		t.Fatalf("load owned: %v", err)
	}
	got, err := json.MarshalIndent(map[string]any{"contracts": reg.Contracts(), "named": reg.Named()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(seedCopies, "registry.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(append(got, '\n')) != string(want) {
		t.Errorf("the owners' registry differs from the copies' (%s)", filepath.Join(seedCopies, "registry.json"))
	}
}

// TestListChecksNames: --systems refuses a name no system has, and names
// the ones it knows.
func TestListChecksNames(t *testing.T) {
	list := systems.List{peas.Plugin{}, mesh.Plugin{}, brain.Plugin{}, assure.Plugin{}}
	if err := list.Check([]string{"peas", "mesh"}); err != nil {
		t.Errorf("known names refused: %v", err)
	}
	err := list.Check([]string{"peas", "tides"})
	if err == nil || err.Error() != `unknown system "tides": want one of peas, mesh, brain, assure` {
		t.Errorf("unknown name: %v", err)
	}
}
