package brain

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// secrets are planted in a room; none may appear in any packet, reply or
// ledger entry.
var tripwires = []string{
	"sk_live_51HxTRIPWIRE",
	"/home/alice",
	"C:\\Users\\alice",
	"alice@example.com",
	"bob.smith@clinic.example",
	"TRANSCRIPT-TRIPWIRE",
	"patient said",
	"hunter2",
	"Quarterly revenue",
}

func tripwireRoom(t testing.TB) *Room {
	transcript := strings.Repeat("TRANSCRIPT-TRIPWIRE: the patient said she would not come back. ", 400)
	props := func(summary string) json.RawMessage {
		return marshal(t, map[string]any{
			"summary":    summary,
			"body":       "Secret body: API key sk_live_51HxTRIPWIRE and password hunter2.",
			"path":       "/home/alice/research/interviews/clinic-07.txt",
			"win_path":   "C:\\Users\\alice\\Documents\\notes.docx",
			"transcript": transcript,
			"owner":      "alice@example.com",
			"tags":       []string{"clinics", "alice@example.com", "/home/alice", strings.Repeat("t", 31)},
			"hsi":        80,
		})
	}
	nodes := []Node{
		{ID: "focus", Type: "claim", SourceSection: "interviews", Properties: props("Call alice@example.com about /home/alice/notes.md")},
		{ID: "c1", Type: "claim", SourceSection: "interviews", Properties: props("Quarterly revenue per clinic from bob.smith@clinic.example")},
		{ID: "c2", Type: "CausalClaim", Properties: props(transcript)},
		{ID: "a1", Type: "assumption", Properties: props("hunter2 is the shared password")},
		{ID: "o1", Type: "opportunity", Properties: props("Quarterly revenue upsell")},
		{ID: "d1", Type: "decision", ReviewStatus: statusProposed, Properties: marshal(t, map[string]any{
			"summary": "Allow excerpts (not confirmed)", "grants_privacy_mode": allowExcerpts})},
	}
	for i := range nodes {
		nodes[i].UpdatedAt = at(-time.Hour)
	}
	r := emptyRoom(t)
	importFile(t, r, RoomFile{
		Room:  &Config{JTBD: "Help alice@example.com recover " + transcript, JTBDTags: []string{"clinics"}, PrivacyMode: allowExcerpts},
		Nodes: nodes,
		Edges: []Edge{
			{Source: "focus", Target: "c1", Type: "SUPPORTS", Properties: props("x")},
			{Source: "focus", Target: "c2", Type: "CONTRADICTS", Properties: marshal(t, map[string]string{"explanation": "alice@example.com disagrees: " + transcript})},
			{Source: "c1", Target: "a1", Type: "ASSUMES"},
			{Source: "focus", Target: "o1", Type: "ENABLES"},
		},
		MemoryEvents: []MemoryEvent{{ID: "e1", EventType: "node_edited", TargetNodeID: "c1", CreatedAt: at(-time.Minute),
			Payload: marshal(t, map[string]string{"diff": transcript, "by": "alice@example.com"})}},
	})
	return r
}

func assertNoTripwire(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, s := range tripwires {
		if strings.Contains(string(b), s) {
			t.Errorf("%s leaks %q", where, s)
		}
	}
}

// TestLeakTripwire builds, sends and ingests a packet of every job under
// every requested privacy mode, and checks that nothing planted in the room
// appears in a packet, a reply or the ledger.
func TestLeakTripwire(t *testing.T) {
	r := tripwireRoom(t)
	f := newWireFixture(t)
	f.wire.Room = r
	ctx := context.Background()
	for _, mode := range []string{"", localSummaryOnly, allowFilenames, allowExcerpts, "raw"} {
		for _, job := range Jobs() {
			p := build(t, r, BuildOptions{Job: job, Focus: "focus", Privacy: mode})
			raw := marshal(t, p)
			assertNoTripwire(t, job+"/"+mode+" packet", raw)
			if p.PrivacyMode == allowFilenames {
				continue // the wire refuses it; see TestSendRefusesNeverStrips
			}
			a, err := f.wire.Send(ctx, raw)
			if err != nil || !a.Answered() {
				t.Fatalf("%s/%s: Send = %+v, %v", job, mode, a, err)
			}
			assertNoTripwire(t, job+" reply", a.Raw)
		}
	}
	all, err := f.ledger.Entries(ctx, custody.Query{})
	if err != nil || len(all) == 0 {
		t.Fatalf("ledger: %d entries, %v", len(all), err)
	}
	for _, e := range all {
		assertNoTripwire(t, "ledger entry "+e.Kind, marshal(t, e))
	}
}

func TestLeakTripwirePacketShape(t *testing.T) {
	r := tripwireRoom(t)
	p := build(t, r, BuildOptions{Job: "opportunity_rank", Focus: "focus", Privacy: allowExcerpts})
	if p.PrivacyMode != localSummaryOnly {
		t.Errorf("an unconfirmed decision granted %s", p.PrivacyMode)
	}
	items := p.LocalGraphSummary.BankedOpportunities.Items
	if len(items) != 1 || len(items[0].Tags) != 1 || items[0].Tags[0] != "clinics" {
		t.Errorf("tags not filtered to labels: %+v", items)
	}
	if p.ActiveContext.FocusNode.Summary != project("Call alice@example.com about /home/alice/notes.md", localSummaryOnly) {
		t.Errorf("focus summary is not the hash of the summary: %q", p.ActiveContext.FocusNode.Summary)
	}
}

// TestRoomRefusesUnsafeIdentifiers: ids, types and event types travel
// unhashed, so the room refuses any that could carry a path, an address or
// prose.
func TestRoomRefusesUnsafeIdentifiers(t *testing.T) {
	tests := []struct {
		name string
		file RoomFile
	}{
		{"ErrEmailID", RoomFile{Nodes: []Node{{ID: "alice@example.com", Type: "claim"}}}},
		{"ErrPathID", RoomFile{Nodes: []Node{{ID: "/home/alice/notes.md", Type: "claim"}}}},
		{"ErrProseID", RoomFile{Nodes: []Node{{ID: "the patient said no", Type: "claim"}}}},
		{"ErrLongID", RoomFile{Nodes: []Node{{ID: strings.Repeat("x", 129), Type: "claim"}}}},
		{"ErrProseType", RoomFile{Nodes: []Node{{ID: "n1", Type: "claim about alice"}}}},
		{"ErrEdgeType", RoomFile{Nodes: []Node{{ID: "n1", Type: "claim"}}, Edges: []Edge{{Source: "n1", Target: "n1", Type: "alice@example.com"}}}},
		{"ErrEdgeToMissingNode", RoomFile{Nodes: []Node{{ID: "n1", Type: "claim"}}, Edges: []Edge{{Source: "n1", Target: "n2", Type: "SUPPORTS"}}}},
		{"ErrEventType", RoomFile{MemoryEvents: []MemoryEvent{{ID: "e1", EventType: "Sent to alice@example.com"}}}},
		{"ErrStage", RoomFile{Room: &Config{Stage: "/home/alice"}}},
		{"ErrOperator", RoomFile{Room: &Config{Operator: "alice@example.com"}}},
		{"ErrChainFrom", RoomFile{Room: &Config{FrameworkChain: &FrameworkChainHint{FetchedAt: "2026-01-01T00:00:00Z",
			Edges: []ChainEdge{{From: ptr("/home/alice")}}}}}},
		{"ErrStatus", RoomFile{Nodes: []Node{{ID: "n1", Type: "claim", ReviewStatus: "approved"}}}},
		{"ErrBrainConfirmedWithoutUser", RoomFile{Nodes: []Node{{ID: "n1", Type: "brain_insight", CreatedBy: createdByBrain, ReviewStatus: statusConfirmed}}}},
		{"ErrPropertiesNotObject", RoomFile{Nodes: []Node{{ID: "n1", Type: "claim", Properties: json.RawMessage(`"text"`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := emptyRoom(t)
			if _, err := r.Import(context.Background(), tt.file); kindOf(err) != custody.EINVALID {
				t.Fatalf("Import err = %v, want invalid", err)
			}
			if n, e, _, _ := r.Counts(context.Background()); n != 0 || e != 0 {
				t.Errorf("a refused import left %d nodes and %d edges", n, e)
			}
		})
	}
}
