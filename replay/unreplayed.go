package replay

import (
	"github.com/custody-dev/custody/gate"
)

// Reasons a recorded call is not replayed (Call.NotReplayed): what the new
// policy would make of it depends on what a replay does not know.
const (
	// NotFailed: custody itself failed the call (the store or the ledger
	// unavailable); no policy decided it.
	NotFailed = "failed"
	// NotGrant: the call ran under a grant and the new policy still asks
	// for an approval; whether the grant would still cover it is not
	// replayed.
	NotGrant = "grant"
	// NotApproval: the call ran with a human's approval and the new
	// policy still asks for one; whether it would be given is not known.
	NotApproval = "approval"
	// NotLink: the tool has custody links under the new policy, which
	// name what earlier calls returned: a replay runs nothing, so they
	// are not checked, and the other rules let the call go on.
	NotLink = "link"
	// NotUnpinned: the new configuration governs the tool, an MCP
	// server's, but no pin on the ledger defines it: its schemas are not
	// known.
	NotUnpinned = "unpinned"
	// NotQuarantined: the call was refused while its tool was in
	// quarantine (its server changed its definition), which is the
	// upstream's doing, not a policy's.
	NotQuarantined = "quarantined"
)

// reasonNotes say in a sentence what each reason leaves out.
var reasonNotes = map[string]string{
	NotFailed:      "failed in custody itself (store or ledger unavailable): no policy decided them",
	NotGrant:       "ran under a grant, and the new policy still asks for an approval: whether the grant would cover them is not replayed",
	NotApproval:    "ran with a human's approval, and the new policy still asks for one: whether it would be given is not replayed",
	NotLink:        "call tools with custody links under the new policy: links name what earlier calls returned, which a replay does not produce, so they are not checked",
	NotUnpinned:    "call a tool the new configuration governs but no pin on the ledger defines: its schemas are not known",
	NotQuarantined: "were refused while their tool was quarantined (its server changed its definition): not a policy's decision",
}

// Unreplayed counts the recorded calls not replayed for one reason.
type Unreplayed struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Note says what the reason leaves out.
	Note string `json:"note"`
	// Seqs are the first entries of up to five of the calls.
	Seqs []int64 `json:"example_seqs"`
}

// notReplayed returns why the call c, recorded with its approval and
// grant refs as approved and granted, is not replayed: "" when it is.
func notReplayed(c Call, approved, granted, quarantined bool, d gate.Decision) string {
	switch {
	case c.Recorded == gate.Denied && quarantined && d.Verdict != gate.Denied:
		return NotQuarantined
	case d.Verdict == gate.Denied:
		return ""
	case len(d.Unchecked) > 0:
		return NotLink
	case d.Verdict == gate.Held && granted:
		return NotGrant
	case d.Verdict == gate.Held && approved:
		return NotApproval
	}
	return ""
}

// countUnreplayed adds c to the count of its reason.
func countUnreplayed(rep *Report, reason string, seq int64) {
	i := -1
	for j, u := range rep.NotReplayed {
		if u.Reason == reason {
			i = j
		}
	}
	if i < 0 {
		i = len(rep.NotReplayed)
		rep.NotReplayed = append(rep.NotReplayed, Unreplayed{Reason: reason, Note: reasonNotes[reason]})
	}
	u := &rep.NotReplayed[i]
	u.Count++
	if len(u.Seqs) < maxExamples {
		u.Seqs = append(u.Seqs, seq)
	}
}
