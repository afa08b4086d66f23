package peas

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
)

// Voice styles of an in-car warning.
const (
	VoiceCalm   = "calm"
	VoiceUrgent = "urgent"
)

// notifyInput is notify_driver's input.
type notifyInput struct {
	VehicleID     string `json:"vehicle_id"`
	VMSUpdateID   string `json:"vms_update_id"`
	WarningText   string `json:"warning_text"`
	TTSVoiceStyle string `json:"tts_voice_style,omitempty"`
}

// NotifyOutput is notify_driver's output. AudioURI is always null: the
// device speaks the text itself.
type NotifyOutput struct {
	NotificationID   string  `json:"notification_id"`
	DeliveredAt      string  `json:"delivered_at"`
	WarningTextShown string  `json:"warning_text_shown"`
	AudioURI         *string `json:"audio_uri"`
	Reasoning        string  `json:"reasoning"`
}

// Notification is what the system keeps of an in-car warning: the
// console's in-car panel.
type Notification struct {
	NotifyOutput
	VehicleID   string `json:"vehicle_id"`
	VMSUpdateID string `json:"vms_update_id"`
	Voice       string `json:"tts_voice_style"`
	LocationID  string `json:"location_id"`
	Trace       string `json:"trace"`
}

// voiceChoice is the operator's choice of voice for a chain's warnings.
type voiceChoice struct {
	Voice    string `json:"tts_voice_style"`
	Operator string `json:"operator_id"`
}

// notifyDriver is the notify_driver handler: it delivers a warning that
// piggybacks on a sign update of the same chain.
func (s *System) notifyDriver(ctx context.Context, call custody.Call) (json.RawMessage, error) {
	var in notifyInput
	if err := decodeArgs(call, &in); err != nil {
		return nil, err
	}
	if in.TTSVoiceStyle == "" {
		in.TTSVoiceStyle = VoiceCalm
	}
	var u update
	if err := s.getDoc(ctx, NSUpdates, in.VMSUpdateID, "sign update", &u); err != nil {
		return nil, err
	}
	if u.Trace != call.Trace {
		return nil, custody.Errorf(custody.EDENIED, "sign update %s belongs to another chain", in.VMSUpdateID)
	}
	if err := s.checkVoice(ctx, in.TTSVoiceStyle, u); err != nil {
		return nil, err
	}
	if err := checkWarning(in.WarningText, u); err != nil {
		return nil, err
	}
	out := NotifyOutput{
		NotificationID: s.d.NewID(), DeliveredAt: custody.FormatTime(s.now()), WarningTextShown: in.WarningText,
		Reasoning: fmt.Sprintf("Delivered to vehicle_id=%s piggybacking on vms_update_id=%s (sign %s showing %q); tts_voice_style=%s; device-local TTS, so audio_uri is null.",
			in.VehicleID, in.VMSUpdateID, u.BillboardID, u.MessageShown, in.TTSVoiceStyle),
	}
	n := Notification{NotifyOutput: out, VehicleID: in.VehicleID, VMSUpdateID: in.VMSUpdateID, Voice: in.TTSVoiceStyle,
		LocationID: u.LocationID, Trace: call.Trace}
	if err := s.putDoc(ctx, NSNotifications, out.NotificationID, n); err != nil {
		return nil, err
	}
	return output(out)
}

// checkWarning refuses a warning that says what the approved sign does
// not (see restates): a driver must never hear "all clear, speed up" under
// a sign that says slow down. The refusal names each claim not on the sign.
func checkWarning(text string, u update) error {
	err := restates(text, u.MessageShown)
	if err == nil {
		return nil
	}
	e := custody.AsError(err)
	return &custody.Error{Kind: custody.EINVALID, Violations: e.Violations,
		Message: fmt.Sprintf("warning_text may only restate sign %s showing %q: %s", u.BillboardID, u.MessageShown, e.Message)}
}

// checkVoice refuses the urgent voice unless the signature was critical and
// the operator chose it for this chain.
func (s *System) checkVoice(ctx context.Context, voice string, u update) error {
	if voice != VoiceUrgent {
		return nil
	}
	if u.Severity != Critical {
		return custody.Errorf(custody.EDENIED, "urgent voice needs a critical signature; this chain's is %s", u.Severity)
	}
	if s.VoiceChoice(ctx, u.ApprovalRequestID) != VoiceUrgent {
		return custody.Errorf(custody.EDENIED, "urgent voice needs the operator's choice; approval %s chose calm", u.ApprovalRequestID)
	}
	return nil
}

// VoiceChoice returns the voice the operator chose for the warnings of an
// approval's chain: calm unless urgent was chosen.
func (s *System) VoiceChoice(ctx context.Context, approvalID string) string {
	var v voiceChoice
	if err := s.getDoc(ctx, NSVoice, approvalID, "voice choice", &v); err != nil || v.Voice != VoiceUrgent {
		return VoiceCalm
	}
	return VoiceUrgent
}

// ChooseVoice records the operator's choice of voice for the warnings of an
// approval's chain. Urgent is refused unless the chain's signature is
// critical. Errors: EINVALID, ENOTFOUND, EDENIED, EUNAVAILABLE.
func (s *System) ChooseVoice(ctx context.Context, approvalID, voice, operator string) error {
	if voice != VoiceCalm && voice != VoiceUrgent {
		return custody.Errorf(custody.EINVALID, "voice %q: want %q or %q", voice, VoiceCalm, VoiceUrgent)
	}
	if operator == "" {
		return custody.Errorf(custody.EINVALID, "a voice choice needs the operator's id")
	}
	var req Request
	if err := s.getDoc(ctx, NSRequests, approvalID, "approval request", &req); err != nil {
		return err
	}
	if voice == VoiceUrgent && req.Severity != Critical {
		return custody.Errorf(custody.EDENIED, "urgent voice needs a critical signature; this chain's is %s", req.Severity)
	}
	return s.putDoc(ctx, NSVoice, approvalID, voiceChoice{Voice: voice, Operator: operator})
}
