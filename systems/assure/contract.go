package assure

import (
	_ "embed"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
)

// contractID is the $id of the ward round tools contract.
const contractID = "https://custody.dev/schemas/assure/ward-round/v1"

// contractFile is the name the tools contract is loaded under.
const contractFile = "ward-round-tools.json"

//go:embed contracts/ward-round-tools.json
var contractJSON []byte

// LoadRegistry loads what assurance reads: the gateway's Clinical Action
// Envelope contract, the ward round tools contract and any extra
// contracts.
func LoadRegistry(extra map[string][]byte) (*contract.Registry, error) {
	all := map[string][]byte{contractFile: contractJSON}
	for k, v := range extra {
		all[k] = v
	}
	return contract.Load(contract.Options{Contracts: []contract.Source{gate.EnvelopeContract()}, Extra: all})
}

// schemaRef returns the ref of a tool's input or output schema.
func schemaRef(tool, io string) string { return contractID + "#/$defs/" + tool + "_" + io }
