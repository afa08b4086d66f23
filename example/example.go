// Package example is a small envelope of three harmless tools, so that a
// fresh custody serves, calls, holds for approval and records something
// real: get_time reads the clock, write_note keeps a note (a reversible
// write) and post_announcement posts to a board (a consequential write
// that waits for an operator, who may edit the message).
package example

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// ContractID is the $id of the example contract.
const ContractID = "https://custody.dev/schemas/example/v1"

// EnvelopeID names the example envelope.
const EnvelopeID = "custody-example"

// State namespaces the example tools write.
const (
	NotesNamespace = "example.notes"
	BoardNamespace = "example.board"
)

//go:embed contract.json
var contractJSON []byte

// Contract returns the example contract and the file name to load it
// under, for contract.Options.Extra.
func Contract() (name string, raw []byte) {
	return "example.json", append([]byte(nil), contractJSON...)
}

// schema returns the canonical ref of a schema in the example contract.
func schema(def string) string { return ContractID + "#/$defs/" + def }

// Tools returns the tools of the example envelope (EnvelopeID): they keep
// their notes and posts in state and read time from now.
func Tools(state custody.StateStore, now func() time.Time) []gate.Tool {
	if now == nil {
		now = time.Now
	}
	return []gate.Tool{
		{Spec: custody.ToolSpec{
			Name: "get_time", Description: "Read the current time, in UTC or an IANA time zone.",
			Input: schema("get_time_input"), Output: schema("get_time_output"),
			Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
		}, Handler: getTime(now)},
		{Spec: custody.ToolSpec{
			Name: "write_note", Description: "Keep a short note with a title; returns its id.",
			Input: schema("write_note_input"), Output: schema("write_note_output"),
			Access: custody.Write, Effect: custody.EffectReversible, Approval: custody.NotRequired,
			Refs: map[string]string{"note_id": "/note_id"},
		}, Handler: writeNote(state, now)},
		{Spec: custody.ToolSpec{
			Name: "post_announcement", Description: "Post an announcement to a team channel; an operator must approve the exact message.",
			Input: schema("post_announcement_input"), Output: schema("post_announcement_output"),
			Access: custody.Write, Effect: custody.EffectConsequential, Approval: custody.HumanConfirmation,
			Refs: map[string]string{"announcement_id": "/announcement_id"},
		}, Handler: postAnnouncement(state, now), Editable: []string{"message"}},
	}
}

// getTime reads the clock.
func getTime(now func() time.Time) gate.Handler {
	return func(_ context.Context, c custody.Call) (json.RawMessage, error) {
		var in struct {
			Zone string `json:"zone"`
		}
		if err := json.Unmarshal(c.Args, &in); err != nil {
			return nil, fmt.Errorf("get_time: decode arguments: %w", err)
		}
		loc := time.UTC
		if in.Zone != "" && in.Zone != "UTC" {
			l, err := time.LoadLocation(in.Zone)
			if err != nil {
				return nil, custody.Errorf(custody.ENOTFOUND, "unknown time zone %q", in.Zone)
			}
			loc = l
		}
		t := now().In(loc)
		return json.Marshal(struct {
			Time string `json:"time"`
			Zone string `json:"zone"`
			Unix int64  `json:"unix"`
		}{t.Format(time.RFC3339Nano), loc.String(), t.Unix()})
	}
}

// note is a kept note.
type note struct {
	Title     string `json:"title"`
	Text      string `json:"text"`
	CreatedAt string `json:"created_at"`
}

// writeNote keeps a note in state.
func writeNote(state custody.StateStore, now func() time.Time) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		var n note
		if err := json.Unmarshal(c.Args, &n); err != nil {
			return nil, fmt.Errorf("write_note: decode arguments: %w", err)
		}
		n.CreatedAt = now().UTC().Format(time.RFC3339Nano)
		id, err := put(ctx, state, NotesNamespace, n)
		if err != nil {
			return nil, fmt.Errorf("write_note: %w", err)
		}
		return json.Marshal(struct {
			NoteID    string `json:"note_id"`
			CreatedAt string `json:"created_at"`
		}{id, n.CreatedAt})
	}
}

// announcement is a posted announcement.
type announcement struct {
	ID       string `json:"announcement_id"`
	Channel  string `json:"channel"`
	Message  string `json:"message"`
	PostedAt string `json:"posted_at"`
}

// postAnnouncement posts to the board in state.
func postAnnouncement(state custody.StateStore, now func() time.Time) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		var a announcement
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return nil, fmt.Errorf("post_announcement: decode arguments: %w", err)
		}
		a.ID = uuid.NewString()
		a.PostedAt = now().UTC().Format(time.RFC3339Nano)
		doc, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("post_announcement: encode: %w", err)
		}
		if state == nil {
			return nil, fmt.Errorf("post_announcement: no state store")
		}
		if err := state.PutState(ctx, BoardNamespace, a.ID, doc); err != nil {
			return nil, fmt.Errorf("post_announcement: store: %w", err)
		}
		return doc, nil
	}
}

// put stores doc under a new id in ns and returns the id.
func put(ctx context.Context, state custody.StateStore, ns string, doc any) (string, error) {
	if state == nil {
		return "", fmt.Errorf("no state store")
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	id := uuid.NewString()
	if err := state.PutState(ctx, ns, id, raw); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return id, nil
}

// BenchTools are the tools the gateway's benchmarks drive: a READ and a
// WRITE on the example contract's schemas, named read and write, whose
// handlers return constant outputs, so that a benchmark measures the
// gateway rather than a tool. The WRITE's output id becomes a ref.
func BenchTools(read, write string) []gate.Tool {
	readOut := json.RawMessage(`{"time":"2026-01-02T03:04:05Z","zone":"UTC","unix":1767323045}`)
	writeOut := json.RawMessage(`{"note_id":"6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c40","created_at":"2026-01-02T03:04:05Z"}`)
	return []gate.Tool{
		{Spec: custody.ToolSpec{Name: read, Description: "benchmark read",
			Input: schema("get_time_input"), Output: schema("get_time_output"),
			Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired},
			Handler: func(context.Context, custody.Call) (json.RawMessage, error) { return readOut, nil }},
		{Spec: custody.ToolSpec{Name: write, Description: "benchmark write",
			Input: schema("write_note_input"), Output: schema("write_note_output"),
			Access: custody.Write, Effect: custody.EffectReversible, Approval: custody.NotRequired,
			Refs: map[string]string{"note_id": "/note_id"}},
			Handler: func(context.Context, custody.Call) (json.RawMessage, error) { return writeOut, nil }},
	}
}
