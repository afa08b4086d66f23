package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems/brain"
)

// TestBrainCheckSchemaNewTextField: check-schema refuses a contract that
// adds a field able to carry text, naming the field, and accepts one that
// adds a bounded field.
func TestBrainCheckSchemaNewTextField(t *testing.T) {
	reg, err := contract.Load(contract.Options{Contracts: seedContracts()})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := reg.Document(brain.SchemaID)
	const score = `"score": { "type": "number" },`
	dir := t.TempDir()
	write := func(name, field string) string {
		s := strings.Replace(string(doc), score, score+field, 1)
		path := filepath.Join(dir, name)
		if s == string(doc) || os.WriteFile(path, []byte(s), 0o600) != nil {
			t.Fatal("could not edit the contract")
		}
		return path
	}
	tests := []struct {
		name  string
		field string
		code  int
		want  string
	}{
		{"ErrBody", `"body": { "type": "string" },`, exitFailed,
			"problem: /$defs/ClaimProjection/properties/body: new property admits free text"},
		{"ErrLongNote", `"note": { "type": "string", "maxLength": 500 },`, exitFailed,
			"problem: /$defs/ClaimProjection/properties/note: new property admits free text"},
		{"ErrOpened", `"extra": { "type": "object", "additionalProperties": true },`, exitFailed,
			"problem: /$defs/ClaimProjection/properties/extra: new property admits free text: an object without additionalProperties: false"},
		{"OKShortNote", `"note": { "type": "string", "maxLength": 80 },`, exitOK, "ok: 12 jobs"},
		{"OKFlag", `"stale": { "type": "boolean" },`, exitOK, "ok: 12 jobs"},
	}
	e := newBrainEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := e.run(t, context.Background(), "brain", "check-schema", "--file", write(tt.name+".json", tt.field))
			if code != tt.code || !strings.Contains(out+errs, tt.want) {
				t.Fatalf("exit %d (want %d), output %s%s; want %q", code, tt.code, out, errs, tt.want)
			}
		})
	}
}

// TestBrainPrivacyFallbackIsSaid: asking for allow_excerpts in a room that
// does not grant it builds a local_summary_only packet, and the command
// says so on stderr; a mode that is applied gets no note.
func TestBrainPrivacyFallbackIsSaid(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	const note = "custody: the packet is local_summary_only, not allow_excerpts: no decision confirmed by a user grants allow_excerpts in this room"
	tests := []struct {
		name    string
		args    []string
		code    int
		mode    string
		noteSay bool
	}{
		{"ExcerptsNotGranted", []string{"--privacy", "allow_excerpts"}, exitOK, "local_summary_only", true},
		{"Default", nil, exitOK, "local_summary_only", false},
		{"FilenamesApplied", []string{"--privacy", "allow_filenames"}, exitFailed, "allow_filenames", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"brain", "packet", "--job", "rank_assumptions", "--focus", "claim-core"}, tt.args...)
			code, out, errs := e.run(t, context.Background(), args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errs)
			}
			var p brain.Packet
			if err := json.Unmarshal([]byte(out), &p); err != nil || p.PrivacyMode != tt.mode {
				t.Fatalf("packet %s (%v), want privacy_mode %s", out, err, tt.mode)
			}
			if strings.Contains(errs, note) != tt.noteSay {
				t.Errorf("stderr %q: note shown = %v, want %v", errs, !tt.noteSay, tt.noteSay)
			}
		})
	}
	t.Run("Ask", func(t *testing.T) {
		_, _, errs := e.run(t, context.Background(), "brain", "ask", "--job", "rank_assumptions", "--focus", "claim-core",
			"--privacy", "allow_excerpts", "--brain-cmd", filepath.Join(t.TempDir(), "no-such-brain"))
		if !strings.Contains(errs, note) {
			t.Errorf("ask stderr lacks the note:\n%s", errs)
		}
	})
}
