package peas_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

const forgedID = "0b6f3c1e-8d2a-4f57-9c3e-5a1d2e3f4a5b"

// vmsArgs spells issue_vms_update arguments.
func vmsArgs(id, billboard, message string) string {
	return fmt.Sprintf(`{"approval_request_id":%q,"billboard_id":%q,"message":%q,"duration_s":1800}`, id, billboard, message)
}

const proposed = "WHITEOUT AND CRASHES AHEAD. SLOW DOWN NOW"

// TestForgedSignUpdatesRefused: every way of posting a sign without its
// operator's approval of exactly that sign and message is refused and
// recorded, and the sign stays blank.
func TestForgedSignUpdatesRefused(t *testing.T) {
	tests := []struct {
		name     string
		decision string // "" leaves the approval pending
		advance  time.Duration
		args     func(id string) string
		kind     string
	}{
		{"NoApproval", "", 0, func(string) string { return vmsArgs(forgedID, sign, proposed) }, custody.EDENIED},
		{"MissingApprovalID", approval.Approve, 0, func(string) string {
			return `{"billboard_id":"I-94:VMS:MM85-EB","message":"WHITEOUT AND CRASHES AHEAD. SLOW DOWN NOW","duration_s":1800}`
		}, custody.EINVALID},
		{"Undecided", "", 0, func(id string) string { return vmsArgs(id, sign, proposed) }, custody.EPENDING},
		{"Declined", approval.Decline, 0, func(id string) string { return vmsArgs(id, sign, proposed) }, custody.EDENIED},
		{"Expired", approval.Approve, 10 * time.Minute, func(id string) string { return vmsArgs(id, sign, proposed) }, custody.EEXPIRED},
		{"OtherBillboard", approval.Approve, 0, func(id string) string { return vmsArgs(id, "I-80:VMS:MM312-WB", proposed) }, custody.EDENIED},
		{"OtherMessage", approval.Approve, 0, func(id string) string { return vmsArgs(id, sign, "ALL CLEAR. RESUME SPEED") }, custody.EDENIED},
		{"OtherDuration", approval.Approve, 0, func(id string) string {
			return strings.Replace(vmsArgs(id, sign, proposed), "1800", "7200", 1)
		}, custody.EDENIED},
		{"LowercaseMessage", approval.Approve, 0, func(id string) string { return vmsArgs(id, sign, strings.ToLower(proposed)) }, custody.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, llm.Router{})
			ch := s.pending(t)
			if tt.decision != "" {
				s.decide(t, ch.ApprovalID, tt.decision, nil)
			}
			s.clock.Add(tt.advance)
			_, err := s.call(ch.Trace, peas.ToolVMS, tt.args(ch.ApprovalID))
			s.refusedOnLedger(t, err, tt.kind)
			s.signShows(t, "")
		})
	}
}

func TestReusedApprovalRefused(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	if _, err := s.call(ch.Trace, peas.ToolVMS, vmsArgs(ch.ApprovalID, sign, proposed)); err != nil {
		t.Fatal(err)
	}
	s.signShows(t, proposed)
	_, err := s.call(ch.Trace, peas.ToolVMS, vmsArgs(ch.ApprovalID, sign, proposed))
	s.refusedOnLedger(t, err, custody.ECONFLICT)
}

func TestEditedApprovalBindsEditedMessage(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	s.decide(t, ch.ApprovalID, approval.Approve, []byte(`{"billboard_id":"I-94:VMS:MM85-EB","message":"STOP. WHITEOUT AHEAD","duration_s":1800}`))
	_, err := s.call(ch.Trace, peas.ToolVMS, vmsArgs(ch.ApprovalID, sign, proposed))
	s.refusedOnLedger(t, err, custody.EDENIED)
	if _, err := s.call(ch.Trace, peas.ToolVMS, vmsArgs(ch.ApprovalID, sign, "STOP. WHITEOUT AHEAD")); err != nil {
		t.Fatalf("the edited message was approved: %v", err)
	}
	s.signShows(t, "STOP. WHITEOUT AHEAD")
}

func TestForgedDriverNotificationsRefused(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	posted := s.pending(t)
	s.decide(t, posted.ApprovalID, approval.Approve, nil)
	if err := s.sys.Continue(ctx, s.gw, posted); err != nil || posted.VMSUpdateID == "" {
		t.Fatalf("first chain: %v (%+v)", err, posted)
	}
	other := s.pending(t)
	notify := func(vms, voice string) string {
		return fmt.Sprintf(`{"vehicle_id":"veh-0417","vms_update_id":%q,"warning_text":"Whiteout ahead, slow down now.","tts_voice_style":%q}`, vms, voice)
	}
	tests := []struct {
		name, trace, args, kind string
	}{
		{"NoVMSUpdate", other.Trace, notify(forgedID, "calm"), custody.EDENIED},
		{"VMSUpdateOfAnotherChain", other.Trace, notify(posted.VMSUpdateID, "calm"), custody.EDENIED},
		{"UrgentWithoutOperatorChoice", posted.Trace, notify(posted.VMSUpdateID, "urgent"), custody.EDENIED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.call(tt.trace, peas.ToolNotify, tt.args)
			s.refusedOnLedger(t, err, tt.kind)
		})
	}
}

func TestForgedBriefRefused(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	rec, err := s.db.State(context.Background(), peas.NSSignatures, ch.SignatureID)
	if err != nil {
		t.Fatal(err)
	}
	altered := strings.Replace(string(rec), `"severity":"critical"`, `"severity":"warn"`, 1)
	start := strings.Index(altered, `{"signature_id"`)
	end := strings.Index(altered, `,"trace"`)
	_, err = s.call(ch.Trace, peas.ToolBrief, `{"signature":`+altered[start:end]+`}`)
	s.refusedOnLedger(t, err, custody.EDENIED)
}
