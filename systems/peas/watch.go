package peas

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
)

// NSWatchAsks holds operators' asks for the approval of a watch signature.
const NSWatchAsks = "peas.watch_asks"

// WatchAsk is an operator's ask to put a watch signature's brief to an
// approval anyway: the one way past watch.
type WatchAsk struct {
	SignatureID string `json:"signature_id"`
	Operator    string `json:"operator_id"`
	AskedAt     string `json:"asked_at"`
}

// AskWatchApproval records that operator asks for the brief of the watch
// signature signatureID to be put to an approval. The operator is the
// authenticated principal of the request that asks; an agent has no way to
// call this. Errors: EINVALID without an operator or for a signature that
// is not watch, ENOTFOUND for an unknown signature, EUNAVAILABLE.
func (s *System) AskWatchApproval(ctx context.Context, signatureID, operator string) (WatchAsk, error) {
	if operator == "" {
		return WatchAsk{}, custody.Errorf(custody.EINVALID, "asking past a watch signature needs the operator's id")
	}
	var rec signatureRecord
	if err := s.getDoc(ctx, NSSignatures, signatureID, "signature", &rec); err != nil {
		return WatchAsk{}, err
	}
	if rec.Signature.Severity != Watch {
		return WatchAsk{}, custody.Errorf(custody.EINVALID, "signature %s is %s, not watch: it needs no ask", signatureID, rec.Signature.Severity)
	}
	ask := WatchAsk{SignatureID: signatureID, Operator: operator, AskedAt: custody.FormatTime(s.now())}
	return ask, s.putDoc(ctx, NSWatchAsks, signatureID, ask)
}

// watchAsked reports whether an operator asked past the watch signature id.
func (s *System) watchAsked(ctx context.Context, signatureID string) (bool, error) {
	var ask WatchAsk
	err := s.getDoc(ctx, NSWatchAsks, signatureID, "watch ask", &ask)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return false, nil
	}
	return err == nil && ask.Operator != "", err
}

// checkWatch is request_approval's policy on watch: the contract says a
// caller should not advance past a watch signature, so a brief built on
// one is not put to an operator unless an operator asked for it.
func (s *System) checkWatch(ctx context.Context, b Brief) error {
	if b.Signature.Severity != Watch {
		return nil
	}
	asked, err := s.watchAsked(ctx, b.Signature.SignatureID)
	if err != nil {
		return err
	}
	if asked {
		return nil
	}
	return &custody.Error{Kind: custody.EDENIED,
		Message: fmt.Sprintf("brief %s is built on watch signature %s: nothing is paged past watch unless an operator asks", b.BriefID, b.Signature.SignatureID),
		Violations: []custody.Violation{{Instance: "/brief_id", Keyword: "custody",
			Message: "watch signature: no operator asked for its approval"}}}
}

// stopAtWatch is the chain's agent backend: once the detector returned a
// watch signature no operator asked past, the chain ends there whatever
// the model would do next.
type stopAtWatch struct {
	llm.Backend
	sys *System
}

// Chat ends the conversation after a watch signature, else asks the model.
func (b stopAtWatch) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	sig, ok := lastSignature(r.Messages)
	if ok && sig.Severity == Watch {
		asked, err := b.sys.watchAsked(ctx, sig.SignatureID)
		if err != nil {
			return llm.Response{}, fmt.Errorf("read watch ask of %s: %w", sig.SignatureID, err)
		}
		if !asked {
			return llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
				Content: fmt.Sprintf("Severity watch at %s: the chain stops here; no brief, nothing to approve.", sig.LocationID)}}, nil
		}
	}
	return b.Backend.Chat(ctx, r)
}

// lastSignature returns the signature of the last successful
// detect_pileup_signature result in msgs.
func lastSignature(msgs []llm.Message) (Signature, bool) {
	names := map[string]string{}
	var sig Signature
	found := false
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
		if m.Role != llm.RoleTool || (m.Name != ToolDetect && names[m.ToolCallID] != ToolDetect) {
			continue
		}
		if _, refused := agent.Refused(m.Content); refused {
			continue
		}
		var out DetectOutput
		if json.Unmarshal([]byte(m.Content), &out) == nil && out.Signature.SignatureID != "" {
			sig, found = out.Signature, true
		}
	}
	return sig, found
}
