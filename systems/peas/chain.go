package peas

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
)

// Stages of a chain run.
const (
	StageWatch    = "watch"    // sub-threshold: no brief
	StagePending  = "pending"  // waiting for the operator
	StagePosted   = "posted"   // the sign shows the approved message
	StageNotified = "notified" // in-car warnings delivered
	StageDeclined = "declined"
	StageExpired  = "expired"
	StageStopped  = "stopped" // the model ended or a call was refused
)

// Chain is one run of the pile-up chain on one sensor window, with the ids
// that thread its chain of custody.
type Chain struct {
	LocationID      string   `json:"location_id"`
	Stage           string   `json:"stage"`
	Trace           string   `json:"trace"`
	SignatureID     string   `json:"signature_id,omitempty"`
	Severity        string   `json:"severity,omitempty"`
	BriefID         string   `json:"brief_id,omitempty"`
	ApprovalID      string   `json:"approval_request_id,omitempty"`
	VMSUpdateID     string   `json:"vms_update_id,omitempty"`
	NotificationIDs []string `json:"notification_ids,omitempty"`
	Final           string   `json:"final,omitempty"`
	// Refusal is the refused call the chain stopped at, as the agent was
	// told of it; nil when its last call ran.
	Refusal *Refusal `json:"refusal,omitempty"`
	// RefusalBudgets are the tools whose refusal budget this chain's trace
	// spent: the gateway denies the agent every further call of them,
	// except one an operator's approval authorises.
	RefusalBudgets []string         `json:"refusal_budgets_spent,omitempty"`
	Transcript     agent.Transcript `json:"-"`
}

// Refusal is a refused call of a chain: the tool and why, in the words
// the agent got (a warning's refusal names the claim not on the sign).
type Refusal struct {
	Tool    string `json:"tool"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// refusalBudgetKeyword is the violation keyword of the gateway's denial of
// a call past its trace's refusal budget.
const refusalBudgetKeyword = "maximum_refusals_per_trace"

// loop returns the agent loop of the chain: the tool-calling backend, or
// the scripted planner when no model is configured, stopped at a watch
// signature whatever it would do next.
func (s *System) loop(gw agent.Gateway) *agent.Loop {
	b := s.d.LLM.For(llm.HopTools)
	if llm.IsTemplate(b) {
		b = Planner{}
	}
	return &agent.Loop{Backend: stopAtWatch{Backend: b, sys: s}, Gateway: gw, Schemas: s.d.Schemas, Actor: "peas-agent", PauseAfter: []string{ToolApprove}}
}

// Start runs the chain on one sensor window of a corridor up to the
// operator's approval (or to its end when the signature is only watch).
// Errors: ENOTFOUND for an unknown corridor; a model's failure.
func (s *System) Start(ctx context.Context, gw agent.Gateway, locationID string, readings json.RawMessage) (*Chain, error) {
	c, ok := s.corridor(locationID)
	if !ok {
		return nil, custody.Errorf(custody.ENOTFOUND, "no corridor %q", locationID)
	}
	task := task{LocationID: c.LocationID, SensorWindowS: 300, Readings: readings, TargetOperatorID: s.d.Operator,
		PreferredChannel: "pwa", ExpiresInS: 300, VehicleIDs: c.Vehicles}
	ch := &Chain{LocationID: c.LocationID}
	ch.Transcript.Messages = []llm.Message{
		{Role: llm.RoleSystem, Content: systemPrompt},
		{Role: llm.RoleUser, Content: taskMessage(c, task)},
	}
	if err := s.advance(ctx, gw, ch); err != nil {
		return ch, err
	}
	return ch, nil
}

const systemPrompt = "You orchestrate a highway pile-up early alert chain through tools. " +
	"Never classify sensor data yourself: detect_pileup_signature does. Never skip a step and never invent ids: " +
	"every id you pass must come from an earlier tool result or from the operator's message."

func taskMessage(c Corridor, t task) string {
	raw, _ := json.Marshal(t)
	return fmt.Sprintf("Corridor %s (%s) reports a new sensor window.\n"+
		"Call detect_pileup_signature with location_id, sensor_window_s and sensor_readings from the task. "+
		"If severity is warn or critical, call compose_ops_brief with the signature exactly as returned, then request_approval "+
		"for the brief with target_operator_id, preferred_channel and expires_in_s from the task, and stop: the operator decides later.\n%s%s",
		c.LocationID, c.Name, taskPrefix, raw)
}

// Continue carries a chain waiting for its approval on once the operator
// decided: with an approval it posts exactly the approved sign update and
// warns the corridor's vehicles; a declined or expired approval ends the
// chain. A chain still waiting is left as it is.
func (s *System) Continue(ctx context.Context, gw agent.Gateway, ch *Chain) error {
	if ch.Stage != StagePending {
		return nil
	}
	a, err := s.d.Approvals.Get(ctx, ch.ApprovalID)
	if err != nil {
		return fmt.Errorf("read approval %s: %w", ch.ApprovalID, err)
	}
	switch a.Status {
	case custody.ApprovalPending:
		if !s.now().Before(a.ExpiresAt) {
			ch.Stage = StageExpired
			s.endTrace(ch)
			return s.saveCorridor(ctx, ch)
		}
		return nil
	case custody.ApprovalDeclined:
		ch.Stage = StageDeclined
		s.endTrace(ch)
		return s.saveCorridor(ctx, ch)
	case custody.ApprovalExpired:
		ch.Stage = StageExpired
		s.endTrace(ch)
		return s.saveCorridor(ctx, ch)
	}
	msg, err := s.resumeMessage(ctx, a)
	if err != nil {
		return err
	}
	ch.Transcript.Messages = append(ch.Transcript.Messages, llm.Message{Role: llm.RoleUser, Content: msg})
	return s.advance(ctx, gw, ch)
}

// resumeMessage tells the model what the operator approved: the sign update
// exactly as approved (the operator may have edited the message) and the
// voice chosen for the in-car warnings.
func (s *System) resumeMessage(ctx context.Context, a custody.Approval) (string, error) {
	args, err := withApprovalID(a.ID, a.Arguments)
	if err != nil {
		return "", err
	}
	voice := s.VoiceChoice(ctx, a.ID)
	return fmt.Sprintf("The operator %s approved approval %s. Call issue_vms_update with exactly these arguments:\n%s%s\n"+
		"Then call notify_driver once for each vehicle in vehicle_ids, citing the vms_update_id it returns, with a short spoken warning "+
		"and tts_voice_style %q.\n%s%s", a.Operator, a.ID, argsPrefix, args, voice, voicePrefix, voice), nil
}

// withApprovalID returns the approved arguments with the approval_request_id
// that cites the approval put first, the approved members kept as they are.
func withApprovalID(id string, approved json.RawMessage) (json.RawMessage, error) {
	body := strings.TrimSpace(string(approved))
	if !strings.HasPrefix(body, "{") || !json.Valid(approved) {
		return nil, custody.Errorf(custody.EINTERNAL, "approved arguments are not a JSON object")
	}
	idJSON, _ := json.Marshal(id)
	rest := strings.TrimSpace(body[1:])
	sep := ","
	if rest == "}" {
		sep = ""
	}
	return json.RawMessage(`{"approval_request_id":` + string(idJSON) + sep + rest), nil
}

// advance runs the agent loop and reads the chain's ids off the outcomes.
func (s *System) advance(ctx context.Context, gw agent.Gateway, ch *Chain) error {
	ch.Transcript.Trace = ch.Trace
	err := s.loop(gw).Run(ctx, &ch.Transcript)
	ch.Trace = ch.Transcript.Trace
	ch.read()
	if err != nil {
		ch.Stage = StageStopped
	}
	s.endTrace(ch)
	if err != nil {
		_ = s.saveCorridor(ctx, ch)
		return err
	}
	return s.saveCorridor(ctx, ch)
}

// read sets the ids and the stage from the transcript.
func (ch *Chain) read() {
	ch.NotificationIDs, ch.Refusal, ch.RefusalBudgets = nil, nil, nil
	for _, o := range ch.Transcript.Outcomes {
		if o.Err == nil {
			ch.readOutput(o.Call.Name, o.Output)
			continue
		}
		ch.readRefusal(o)
	}
	t := &ch.Transcript
	if !lastRefused(t) {
		ch.Refusal = nil
	}
	ch.Final = t.Final
	switch {
	case t.Stop == agent.StopPending && ch.ApprovalID != "":
		ch.Stage = StagePending
	case ch.Severity == Watch:
		ch.Stage = StageWatch
	case len(ch.NotificationIDs) > 0 && t.Stop == agent.StopFinal && !lastRefused(t):
		ch.Stage = StageNotified
	case ch.VMSUpdateID != "" && !lastRefused(t):
		ch.Stage = StagePosted
	default:
		ch.Stage = StageStopped
	}
}

// readRefusal notes a refused call: the latest refusal, and the tool when
// the gateway denied it for a spent refusal budget.
func (ch *Chain) readRefusal(o agent.Outcome) {
	ch.Refusal = &Refusal{Tool: o.Call.Name, Kind: o.Err.Kind, Message: o.Err.Message}
	for _, v := range o.Err.Violations {
		if v.Keyword == refusalBudgetKeyword && !slices.Contains(ch.RefusalBudgets, o.Call.Name) {
			ch.RefusalBudgets = append(ch.RefusalBudgets, o.Call.Name)
		}
	}
}

func lastRefused(t *agent.Transcript) bool {
	return len(t.Outcomes) > 0 && t.Outcomes[len(t.Outcomes)-1].Err != nil
}

func (ch *Chain) readOutput(tool string, out json.RawMessage) {
	var v struct {
		Signature      Signature `json:"signature"`
		BriefID        string    `json:"brief_id"`
		ApprovalID     string    `json:"approval_request_id"`
		VMSUpdateID    string    `json:"vms_update_id"`
		NotificationID string    `json:"notification_id"`
	}
	_ = json.Unmarshal(out, &v)
	switch tool {
	case ToolDetect:
		ch.SignatureID, ch.Severity = v.Signature.SignatureID, v.Signature.Severity
	case ToolBrief:
		ch.BriefID = v.BriefID
	case ToolApprove:
		ch.ApprovalID = v.ApprovalID
	case ToolVMS:
		ch.VMSUpdateID = v.VMSUpdateID
	case ToolNotify:
		ch.NotificationIDs = append(ch.NotificationIDs, v.NotificationID)
	}
}
