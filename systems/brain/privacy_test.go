package brain

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/custody-dev/custody"
)

func TestPrivacyModeResolution(t *testing.T) {
	grant := func(status, by string) Node {
		return Node{ID: "grant", Type: "decision", ReviewStatus: status, ConfirmedBy: by,
			Properties: json.RawMessage(`{"summary":"Excerpts are fine for this room.","grants_privacy_mode":"allow_excerpts"}`)}
	}
	tests := []struct {
		name      string
		requested string
		config    string
		grant     *Node
		want      string
	}{
		{"DefaultIsSummaryOnly", "", "", nil, localSummaryOnly},
		{"CallModeWins", allowFilenames, localSummaryOnly, nil, allowFilenames},
		{"CallLowersConfig", localSummaryOnly, allowFilenames, nil, localSummaryOnly},
		{"UnknownCallModeFallsToConfig", "everything", allowFilenames, nil, allowFilenames},
		{"UnknownConfigModeFallsToDefault", "", "everything", nil, localSummaryOnly},
		{"ExcerptsWithoutGrant", allowExcerpts, "", nil, localSummaryOnly},
		{"ExcerptsFromConfigWithoutGrant", "", allowExcerpts, nil, localSummaryOnly},
		{"ExcerptsWithProposedGrant", allowExcerpts, "", ptr(grant(statusProposed, "")), localSummaryOnly},
		{"ExcerptsWithConfirmedGrant", allowExcerpts, "", ptr(grant(statusConfirmed, "maya")), allowExcerpts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := emptyRoom(t)
			f := RoomFile{Room: &Config{PrivacyMode: tt.config},
				Nodes: []Node{{ID: "focus", Type: "claim", Properties: json.RawMessage(`{"summary":"` + strings.Repeat("word ", 40) + `"}`)}}}
			if tt.grant != nil {
				f.Nodes = append(f.Nodes, *tt.grant)
			}
			importFile(t, r, f)
			p := build(t, r, BuildOptions{Job: "suggest_next_move", Focus: "focus", Privacy: tt.requested})
			if p.PrivacyMode != tt.want {
				t.Fatalf("privacy_mode = %s, want %s", p.PrivacyMode, tt.want)
			}
			s := p.ActiveContext.FocusNode.Summary
			if tt.want == allowExcerpts {
				if utf8.RuneCountInString(s) > maxExcerpt || !strings.HasSuffix(s, "...") {
					t.Errorf("excerpt %q", s)
				}
			} else if len(s) != hashedLen {
				t.Errorf("summary %q is not a hash", s)
			}
		})
	}
}

// TestWireRefusesExcerptMode: a room may grant excerpts, but the contract
// accepts only local_summary_only, so such a packet never leaves.
func TestWireRefusesExcerptMode(t *testing.T) {
	f := newWireFixture(t)
	ctx := context.Background()
	importFile(t, f.room, RoomFile{Nodes: []Node{{ID: "grant", Type: "decision", ReviewStatus: statusConfirmed,
		ConfirmedBy: "maya", Properties: json.RawMessage(`{"grants_privacy_mode":"allow_excerpts"}`)}}})
	p := build(t, f.room, BuildOptions{Job: "suggest_next_move", Focus: "claim-core", Privacy: allowExcerpts})
	if p.PrivacyMode != allowExcerpts {
		t.Fatalf("privacy_mode = %s", p.PrivacyMode)
	}
	_, err := f.wire.Send(ctx, marshal(t, p))
	var e *custody.Error
	if kindOf(err) != custody.EINVALID || !asError(err, &e) || !hasViolationAt(e, "/privacy_mode") {
		t.Fatalf("Send err = %v", err)
	}
	if f.brain.n.Load() != 0 {
		t.Fatal("an excerpt packet reached the Brain")
	}
}

func asError(err error, e **custody.Error) bool {
	*e = custody.AsError(err)
	return err != nil
}

func hasViolationAt(e *custody.Error, instance string) bool {
	for _, v := range e.Violations {
		if v.Instance == instance {
			return true
		}
	}
	return false
}
