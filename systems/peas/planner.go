package peas

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
)

// Planner is the deterministic scripted backend that drives the chain when
// no model is configured. It plans each next call from the transcript: the
// task line of the first user message, the tool results so far and the
// operator's decision. It never decides anything a model would not: the
// detector classifies, the operator approves, the gateway enforces.
type Planner struct{}

var _ llm.Backend = Planner{}

// Name returns "planner".
func (Planner) Name() string { return "planner" }

// Lines that carry structured data in the chain's user messages.
const (
	taskPrefix  = "TASK "
	argsPrefix  = "ARGS "
	voicePrefix = "VOICE "
)

// task is what the orchestrator asks of one chain run.
type task struct {
	LocationID       string          `json:"location_id"`
	SensorWindowS    int             `json:"sensor_window_s"`
	Readings         json.RawMessage `json:"sensor_readings"`
	TargetOperatorID string          `json:"target_operator_id"`
	PreferredChannel string          `json:"preferred_channel"`
	ExpiresInS       int             `json:"expires_in_s"`
	VehicleIDs       []string        `json:"vehicle_ids"`
}

// plan is what the planner learned from a transcript.
type plan struct {
	task      task
	results   map[string][]json.RawMessage // successful outputs by tool
	lastError string                       // the refusal of the last tool message
	args      json.RawMessage              // the approved issue_vms_update arguments
	voice     string
}

// Chat returns the next call of the chain, or a final answer.
func (Planner) Chat(_ context.Context, r llm.Request) (llm.Response, error) {
	p := readPlan(r.Messages)
	msg := llm.Message{Role: llm.RoleAssistant}
	switch {
	case p.task.LocationID == "":
		msg.Content = "No task line: nothing to do."
	case p.lastError != "":
		msg.Content = "Chain stopped: " + p.lastError
	default:
		msg = p.next()
	}
	return llm.Response{Message: msg}, nil
}

func readPlan(msgs []llm.Message) plan {
	p := plan{results: map[string][]json.RawMessage{}, voice: VoiceCalm}
	names := map[string]string{}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			p.readUser(m.Content)
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
		case llm.RoleTool:
			p.lastError = ""
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			if kind, refused := agent.Refused(m.Content); refused {
				p.lastError = fmt.Sprintf("%s refused (%s)", name, kind)
				continue
			}
			p.results[name] = append(p.results[name], json.RawMessage(m.Content))
		}
	}
	return p
}

func (p *plan) readUser(content string) {
	for _, line := range strings.Split(content, "\n") {
		switch {
		case strings.HasPrefix(line, taskPrefix):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, taskPrefix)), &p.task)
		case strings.HasPrefix(line, argsPrefix):
			p.args = json.RawMessage(strings.TrimPrefix(line, argsPrefix))
		case strings.HasPrefix(line, voicePrefix):
			p.voice = strings.TrimSpace(strings.TrimPrefix(line, voicePrefix))
		}
	}
}

// next plans the next step of the chain.
func (p *plan) next() llm.Message {
	var det DetectOutput
	switch {
	case len(p.results[ToolDetect]) == 0:
		return p.call(ToolDetect, map[string]any{"location_id": p.task.LocationID, "sensor_window_s": p.task.SensorWindowS, "sensor_readings": p.task.Readings})
	case json.Unmarshal(p.results[ToolDetect][0], &det) != nil:
		return final("Detector output unreadable.")
	case det.Signature.Severity == Watch:
		return final(fmt.Sprintf("Severity watch at %s: no brief, nothing to approve.", det.Signature.LocationID))
	case len(p.results[ToolBrief]) == 0:
		return p.call(ToolBrief, map[string]any{"signature": json.RawMessage(mustJSON(det.Signature))})
	case len(p.results[ToolApprove]) == 0:
		var b BriefOutput
		_ = json.Unmarshal(p.results[ToolBrief][0], &b)
		return p.call(ToolApprove, map[string]any{"brief_id": b.BriefID, "target_operator_id": p.task.TargetOperatorID,
			"preferred_channel": p.task.PreferredChannel, "expires_in_s": p.task.ExpiresInS})
	case p.args == nil:
		return final("Waiting for the operator's decision.")
	case len(p.results[ToolVMS]) == 0:
		return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_vms", Name: ToolVMS, Arguments: p.args}}}
	}
	return p.notify()
}

// notify plans one notify_driver call per vehicle, then the final answer.
func (p *plan) notify() llm.Message {
	var u VMSOutput
	_ = json.Unmarshal(p.results[ToolVMS][0], &u)
	done := len(p.results[ToolNotify])
	if done >= len(p.task.VehicleIDs) {
		return final(fmt.Sprintf("Sign update %s posted and %d vehicle(s) warned.", u.VMSUpdateID, done))
	}
	text := spoken(u.MessageShown)
	return p.call(ToolNotify, map[string]any{"vehicle_id": p.task.VehicleIDs[done], "vms_update_id": u.VMSUpdateID,
		"warning_text": text, "tts_voice_style": p.voice})
}

func (p *plan) call(tool string, args map[string]any) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{
		ID: fmt.Sprintf("call_%s_%d", tool, len(p.results[tool])), Name: tool, Arguments: mustJSON(args)}}}
}

func final(text string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: text} }

// mustJSON encodes values the planner built itself: maps of strings,
// numbers and raw JSON that cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return raw
}

// spoken is a sign's message as a short spoken warning that restates it:
// sentence case, each sentence ended ("WHITEOUT. SLOW DOWN" becomes
// "Whiteout. Slow down.").
func spoken(message string) string {
	var out []string
	for _, sentence := range strings.FieldsFunc(message, func(r rune) bool { return r == '.' || r == '!' }) {
		sentence = strings.ToLower(strings.TrimSpace(sentence))
		if sentence != "" {
			out = append(out, strings.ToUpper(sentence[:1])+sentence[1:]+".")
		}
	}
	return strings.Join(out, " ")
}
