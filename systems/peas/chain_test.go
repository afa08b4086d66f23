package peas_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

func TestChainEndToEnd(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	ch := s.pending(t)
	s.signShows(t, "")
	if err := s.sys.ChooseVoice(ctx, ch.ApprovalID, peas.VoiceUrgent, "op-1"); err != nil {
		t.Fatal(err)
	}
	edited := json.RawMessage(`{"billboard_id":"I-94:VMS:MM85-EB","message":"WHITEOUT. CRASHES AHEAD. STOP SAFELY","duration_s":1800}`)
	s.decide(t, ch.ApprovalID, approval.Approve, edited)
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageNotified || ch.VMSUpdateID == "" || len(ch.NotificationIDs) != 3 {
		t.Fatalf("chain = %+v, want notified with 3 notifications", ch)
	}
	s.signShows(t, "WHITEOUT. CRASHES AHEAD. STOP SAFELY")
	ns, err := s.sys.Notifications(ctx)
	if err != nil || len(ns) != 3 || ns[0].Voice != peas.VoiceUrgent || ns[0].AudioURI != nil {
		t.Fatalf("notifications = %+v, %v", ns, err)
	}
	if _, err := s.db.Verify(ctx); err != nil {
		t.Fatalf("ledger verify: %v", err)
	}
	for ref, id := range map[string]string{"signature_id": ch.SignatureID, "brief_id": ch.BriefID,
		"approval_request_id": ch.ApprovalID, "vms_update_id": ch.VMSUpdateID, "notification_id": ch.NotificationIDs[0]} {
		es, err := s.db.Entries(ctx, custody.Query{Trace: ch.Trace, Kind: custody.KindCallSucceeded, Refs: map[string]string{ref: id}})
		if err != nil || len(es) == 0 {
			t.Errorf("no call.succeeded entry in trace with %s=%s (%v)", ref, id, err)
		}
	}
}

func TestChainWatchStops(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch, err := s.sys.Start(context.Background(), s.gw, location, json.RawMessage(calm))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageWatch || ch.BriefID != "" {
		t.Fatalf("chain = %+v, want watch with no brief", ch)
	}
}

func TestChainDeclined(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	s.decide(t, ch.ApprovalID, approval.Decline, nil)
	if err := s.sys.Continue(context.Background(), s.gw, ch); err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageDeclined {
		t.Fatalf("stage %q, want declined", ch.Stage)
	}
	s.signShows(t, "")
}
