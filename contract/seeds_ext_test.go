package contract_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/peas"
)

// TestSeedSourcesAgree proves that the seed copies this package's tests
// load are the owners' contracts byte for byte and are named as the
// owners name them, so the tests here speak for the contracts custody
// serves.
func TestSeedSourcesAgree(t *testing.T) {
	owned := []contract.Source{peas.Contract(), brain.Contract(), gate.EnvelopeContract()}
	copies := contract.SeedsForTest(t)
	for i, s := range owned {
		if s.File != copies[i].File || !bytes.Equal(s.Raw, copies[i].Raw) {
			t.Errorf("seed %d: owner has %s (%d bytes), testdata has %s (%d bytes)", i, s.File, len(s.Raw), copies[i].File, len(copies[i].Raw))
		}
	}
	want, err := contract.Load(contract.Options{Contracts: copies})
	if err != nil {
		t.Fatalf("load copies: %v", err)
	}
	got, err := contract.Load(contract.Options{Contracts: owned})
	if err != nil {
		t.Fatalf("load owned: %v", err)
	}
	if !slices.Equal(got.Named(), want.Named()) || len(got.Named()) != 48 {
		t.Errorf("owners name %d schemas, the copies %d; want the same 48", len(got.Named()), len(want.Named()))
	}
	if !slices.Equal(got.Contracts(), want.Contracts()) {
		t.Errorf("owned contracts %+v, copies %+v", got.Contracts(), want.Contracts())
	}
}
