package assure

import "embed"

//go:embed envelopes/ward-round.json
var wardRoundJSON []byte

// envelopeFiles holds every envelope the harness ships.
//
//go:embed envelopes/*.json
var envelopeFiles embed.FS

// WardRoundEnvelope returns the example envelope DF-SYN-WF-WARD-ROUND, the
// one the README's tour lints and runs.
func WardRoundEnvelope() []byte { return append([]byte(nil), wardRoundJSON...) }
