package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const vmsUpdate = `{"approval_request_id": "3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f", "billboard_id": "I-94:VMS:MM85-EB", "message": "PILE-UP AHEAD. SLOW DOWN NOW"}`

// runMain runs the program in process and returns its exit code, stdout
// and stderr.
func runMain(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := &Main{
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
	}
	code := m.Run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeLines parses stdout as JSON lines of violations.
func decodeLines(t *testing.T, out string) []violationLine {
	t.Helper()
	var lines []violationLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var v violationLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		lines = append(lines, v)
	}
	return lines
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	good := writeTemp(t, dir, "good.json", vmsUpdate)
	extra := writeTemp(t, dir, "extra.json", strings.Replace(vmsUpdate, "{", `{"transcript": "x", `, 1))
	dup := writeTemp(t, dir, "dup.json", `{"message": "A", "message": "B"}`)
	tests := []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantLines []violationLine
		wantErr   string
	}{
		{"OKFile", "", []string{"--schema", "peas:issue_vms_update/input", good}, 0, nil, ""},
		{"OKStdin", vmsUpdate, []string{"--schema", "https://peas.local/schemas/v0/tools.json#/tools/3/input"}, 0, nil, ""},
		{"OKExplicitStdin", vmsUpdate, []string{"--schema", "peas:issue_vms_update/input", "-"}, 0, nil, ""},
		{"ErrExtraField", "", []string{"--schema", "peas:issue_vms_update/input", good, extra}, 1, []violationLine{{
			File: extra, Instance: "", Keyword: "https://peas.local/schemas/v0/tools.json#/tools/3/input/additionalProperties",
			Message: `additional property "transcript" is not allowed`,
		}}, ""},
		{"ErrStdinWrongType", `{"approval_request_id": 1, "billboard_id": "B", "message": "SLOW DOWN"}`, []string{"--schema", "peas:issue_vms_update/input"}, 1, []violationLine{{
			File: "-", Instance: "/approval_request_id", Keyword: "https://peas.local/schemas/v0/tools.json#/$defs/uuid_v4/type",
			Message: "got number, want string",
		}}, ""},
		{"ErrDuplicateKey", "", []string{"--schema", "peas:issue_vms_update/input", dup}, 1, []violationLine{{
			File: dup, Message: `invalid JSON: duplicate key "message" at byte 17`,
		}}, ""},
		{"ErrMalformedStdin", `{"a": }`, []string{"--schema", "peas:issue_vms_update/input"}, 1, []violationLine{{
			File: "-", Instance: "/a", Message: `invalid JSON: unexpected character '}' at byte 6 (in /a)`,
		}}, ""},
		{"ErrMissingSchema", "", []string{good}, 2, nil, "--schema is required"},
		{"ErrUnknownSchema", "", []string{"--schema", "peas:nope", good}, 2, nil, `unknown schema "peas:nope"`},
		{"ErrUnreadableFile", "", []string{"--schema", "peas:issue_vms_update/input", filepath.Join(dir, "missing.json"), good}, 2, nil, "missing.json"},
		{"ErrBadFlag", "", []string{"--nope"}, 2, nil, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, nil, tc.stdin, append([]string{"validate"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.wantCode, stderr)
			}
			got := decodeLines(t, stdout)
			if len(got) != len(tc.wantLines) {
				t.Fatalf("got %d lines %+v, want %+v", len(got), got, tc.wantLines)
			}
			for i := range got {
				if got[i] != tc.wantLines[i] {
					t.Errorf("line %d = %+v, want %+v", i, got[i], tc.wantLines[i])
				}
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.wantErr)
			}
		})
	}
}

func TestValidateUserContracts(t *testing.T) {
	dir := t.TempDir()
	writeTemp(t, dir, "fleet.json", `{"$id": "https://example.test/fleet.json", "type": "object", "required": ["plate"]}`)
	doc := writeTemp(t, t.TempDir(), "truck.json", `{}`)
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"ErrFlag", nil, []string{"validate", "--contracts", dir, "--schema", "fleet", doc}, 1, ""},
		{"ErrEnvironment", map[string]string{"CUSTODY_CONTRACTS": dir}, []string{"validate", "--schema", "fleet", doc}, 1, ""},
		{"ErrNoDirectory", nil, []string{"validate", "--schema", "fleet", doc}, 2, `unknown schema "fleet"`},
		{"ErrMissingDirectory", nil, []string{"validate", "--contracts", filepath.Join(dir, "none"), "--schema", "fleet", doc}, 2, "cannot be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tc.env, "", tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.wantCode, tc.wantErr)
			}
		})
	}
}

func TestValidateBrokenContract(t *testing.T) {
	dir := t.TempDir()
	broken := writeTemp(t, dir, "broken.json", `{"$id": "https://example.test/broken", "type": 12}`)
	code, _, stderr := runMain(t, nil, "{}", "validate", "--contracts", dir, "--schema", "cae:envelope")
	if code != exitUsage || !strings.Contains(stderr, broken) || !strings.Contains(stderr, "does not compile") {
		t.Errorf("exit %d, stderr %q; want 2 naming %s", code, stderr, broken)
	}
}

func TestContractsCommand(t *testing.T) {
	dir := t.TempDir()
	writeTemp(t, dir, "fleet.json", `{"$id": "https://example.test/fleet.json", "title": "Fleet", "$defs": {"truck": {"type": "object"}}}`)
	code, stdout, stderr := runMain(t, nil, "", "contracts", "--contracts", dir)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"https://peas.local/schemas/v0/tools.json",
		"https://mindrian-os.com/schemas/brain-packet/1.0",
		"https://dashfin.org/schemas/df-clinical-action-envelope-v0.1.schema.json",
		"https://example.test/fleet.json",
		"fleet:truck",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// Every named schema is on its own line, with the URI in one column.
	column := -1
	for _, line := range strings.Split(stdout, "\n") {
		name, _, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "peas:issue_vms_update/") {
			continue
		}
		at := strings.Index(line, "https://peas.local/schemas/v0/tools.json#/tools/3/")
		if at < 0 || (column >= 0 && at != column) {
			t.Errorf("line %q: URI not aligned at column %d", line, column)
		}
		column = at
	}
	if column < 0 {
		t.Errorf("issue_vms_update schemas not listed:\n%s", stdout)
	}
	if code, _, _ := runMain(t, nil, "", "contracts", "extra"); code != exitUsage {
		t.Errorf("contracts with an argument: exit %d, want 2", code)
	}
}
