package peas_test

import (
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems/peas"
)

// TestContractNamesTools checks that the contract names each tool's input
// and output at the refs the system validates against.
func TestContractNamesTools(t *testing.T) {
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatal(err)
	}
	tools := []string{peas.ToolDetect, peas.ToolBrief, peas.ToolApprove, peas.ToolVMS, peas.ToolNotify}
	for i, tool := range tools {
		for _, io := range []string{"input", "output"} {
			got, err := reg.Resolve("peas:" + tool + "/" + io)
			if err != nil || got != peas.Ref(i, io) {
				t.Errorf("Resolve(peas:%s/%s) = %q, %v; want %q", tool, io, got, err, peas.Ref(i, io))
			}
		}
	}
	if _, err := reg.Resolve("peas:peas_mesh_advisory_v1"); err != nil {
		t.Errorf("the mesh advisory $defs entry is not named: %v", err)
	}
}
