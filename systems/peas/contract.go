package peas

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/custody-dev/custody/contract"
)

// contractFile is the name the tools contract is listed under.
const contractFile = "peas-tools.json"

// contractJSON is the PEAS tools contract (seed 000), byte for byte as
// published without its leading file-name line.
//
//go:embed contracts/peas-tools.json
var contractJSON []byte

// Contract returns the PEAS tools contract for contract.Options.Contracts.
// It names every tool's input and output "peas:TOOL/input" and
// "peas:TOOL/output", and every $defs entry "peas:DEF".
func Contract() contract.Source {
	return contract.Source{File: contractFile, Raw: append([]byte(nil), contractJSON...), Names: contractNames}
}

// contractNames names the schemas of the tools contract tree.
func contractNames(tree any) []contract.Name {
	var out []contract.Name
	obj, _ := tree.(map[string]any)
	tools, _ := obj["tools"].([]any)
	for i, t := range tools {
		tool, _ := t.(map[string]any)
		name, _ := tool["name"].(string)
		for _, io := range []string{"input", "output"} {
			if tool[io] != nil {
				out = append(out, contract.Name{Name: fmt.Sprintf("peas:%s/%s", name, io), Pointer: contract.Pointer("tools", strconv.Itoa(i), io)})
			}
		}
	}
	return append(out, contract.DefNames("peas", tree)...)
}
