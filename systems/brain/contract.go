package brain

import (
	_ "embed"
	"slices"

	"github.com/custody-dev/custody/contract"
)

// contractFile is the name the packet contract is listed under.
const contractFile = "brain-packet.json"

// contractJSON is the Brain Context Packet v1.0 contract (seed 002), byte
// for byte as published.
//
//go:embed contracts/brain-packet.json
var contractJSON []byte

// Contract returns the Brain packet contract for contract.Options.Contracts.
// It names the in and out shape of every job "brain:JOB/in" and
// "brain:JOB/out": each $defs entry that has them.
func Contract() contract.Source {
	return contract.Source{File: contractFile, Raw: append([]byte(nil), contractJSON...), Names: contractNames}
}

// contractNames names the job shapes of the packet contract tree.
func contractNames(tree any) []contract.Name {
	obj, _ := tree.(map[string]any)
	defs, _ := obj["$defs"].(map[string]any)
	jobs := make([]string, 0, len(defs))
	for job := range defs {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	var out []contract.Name
	for _, job := range jobs {
		def, _ := defs[job].(map[string]any)
		for _, io := range []string{"in", "out"} {
			if def[io] != nil {
				out = append(out, contract.Name{Name: "brain:" + job + "/" + io, Pointer: contract.Pointer("$defs", job, io)})
			}
		}
	}
	return out
}
