package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/systems/brain"
)

// brainEnv is the environment of the in-process program in these tests.
type brainEnv struct {
	room, data string
}

func newBrainEnv(t *testing.T) brainEnv {
	dir := t.TempDir()
	return brainEnv{room: filepath.Join(dir, "room.db"), data: filepath.Join(dir, "data")}
}

// run runs custody with args in-process and returns the exit code, stdout
// and stderr.
func (e brainEnv) run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := e.main(&stdout, &stderr).Run(ctx, args)
	return code, stdout.String(), stderr.String()
}

func (e brainEnv) main(stdout, stderr interface{ Write([]byte) (int, error) }) *Main {
	env := map[string]string{"CUSTODY_ROOM": e.room, "CUSTODY_DATA": e.data}
	return &Main{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		Getenv: func(k string) string { return env[k] }}
}

func (e brainEnv) imported(t *testing.T) brainEnv {
	t.Helper()
	if code, _, errs := e.run(t, context.Background(), "brain", "import", "../../systems/brain/testdata/example_room.json"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	return e
}

// spawnedBrainCmd re-runs this test binary as "custody brain serve --stdio"
// (see TestBrainSpawnedServer).
func spawnedBrainCmd(t *testing.T) string {
	t.Setenv("CUSTODY_BRAIN_SPAWNED", "1")
	return os.Args[0] + " -test.run=^TestBrainSpawnedServer$"
}

// TestBrainSpawnedServer is not a test: it is the stdio Brain that the ask
// tests spawn.
func TestBrainSpawnedServer(t *testing.T) {
	if os.Getenv("CUSTODY_BRAIN_SPAWNED") != "1" {
		t.Skip("runs only as a spawned Brain")
	}
	os.Exit(NewMain().Run(context.Background(), []string{"brain", "serve", "--stdio"}))
}

func TestBrainPacketCommand(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	reg, err := contract.Load(contract.Options{Contracts: seedContracts()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"OK", []string{"--job", "detect_contradiction", "--focus", "claim-core"}, 0},
		{"OKPrivacyRequested", []string{"--job", "opportunity_rank", "--focus", "opp-deposits", "--privacy", "allow_excerpts"}, 0},
		{"ErrUnknownJob", []string{"--job", "write_poem", "--focus", "claim-core"}, exitFailed},
		{"ErrUnknownFocus", []string{"--job", "rank_assumptions", "--focus", "nope"}, exitUsage},
		{"ErrNoFocus", []string{"--job", "rank_assumptions"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := e.run(t, context.Background(), append([]string{"brain", "packet"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errs)
			}
			if code != 0 {
				return
			}
			var p brain.Packet
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			compact, _ := json.Marshal(p)
			if err := reg.Validate(brain.InRef(p.Job), compact); err != nil {
				t.Errorf("printed packet does not validate: %v", err)
			}
		})
	}
}

// TestBrainPacketTheWireWouldRefuse: a packet built with a privacy mode
// the wire refuses is printed for inspection, but the command says so,
// with the violation, and fails.
func TestBrainPacketTheWireWouldRefuse(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	code, out, errs := e.run(t, context.Background(), "brain", "packet", "--job", "detect_contradiction", "--focus", "claim-core", "--privacy", "allow_filenames")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d: %s", code, exitFailed, errs)
	}
	var p brain.Packet
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.PrivacyMode != "allow_filenames" {
		t.Fatalf("printed packet %q (%v), want the allow_filenames packet", out, err)
	}
	for _, want := range []string{"the wire would refuse this packet", brain.InRef("detect_contradiction"), "/privacy_mode"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestBrainAskOverStdioThenReview(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	ctx := context.Background()
	code, out, errs := e.run(t, ctx, "brain", "ask", "--job", "rank_assumptions", "--focus", "claim-core",
		"--brain-cmd", spawnedBrainCmd(t))
	if code != 0 {
		t.Fatalf("ask: exit %d: %s", code, errs)
	}
	var got struct {
		Answer   brain.Answer       `json:"answer"`
		Ingested brain.IngestReport `json:"ingested"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Ingested.Nodes) == 0 {
		t.Fatalf("ask output %s (%v)", out, err)
	}
	id := got.Ingested.Nodes[0]
	if !strings.HasPrefix(id, "brain_insight:rank_assumptions:") {
		t.Fatalf("insight id %s", id)
	}
	steps := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ListShowsTheProposal", nil, 0, `"id": "` + id + `"`},
		{"ErrConfirmWithoutUser", []string{"--confirm", id}, exitFailed, "named user"},
		{"ErrConfirmAsBrain", []string{"--confirm", id, "--user", "brain"}, exitFailed, "named user"},
		{"ConfirmAsUser", []string{"--confirm", id, "--user", "maya"}, 0, `"confirmed_by": "maya"`},
		{"ErrConfirmTwice", []string{"--confirm", id, "--user", "maya"}, exitFailed, "not proposed"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, out, errs := e.run(t, ctx, append([]string{"brain", "review"}, s.args...)...)
			if code != s.code || !strings.Contains(out+errs, s.want) {
				t.Fatalf("exit %d (want %d), output %s %s; want %q", code, s.code, out, errs, s.want)
			}
		})
	}
}

func TestBrainAskSoftFailure(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	code, out, errs := e.run(t, context.Background(), "brain", "ask", "--job", "suggest_next_move",
		"--focus", "claim-core", "--brain-cmd", filepath.Join(t.TempDir(), "no-such-brain"))
	if code != exitFailed || !strings.Contains(out, brain.ReasonUnreachable) {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	code, out, _ = e.run(t, context.Background(), "brain", "review")
	if code != 0 || strings.Contains(out, "brain_insight") {
		t.Fatalf("a soft failure stored proposals: %s", out)
	}
}

func TestBrainServeHTTPAndAsk(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- e.main(&lockedbuf.Buffer{}, stderr).Run(ctx, []string{"brain", "serve", "--addr", "127.0.0.1:0"})
	}()
	addr := regexp.MustCompile(`http://\S+/mcp`)
	deadline := time.Now().Add(10 * time.Second)
	for addr.FindString(stderr.String()) == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	url := addr.FindString(stderr.String())
	if url == "" {
		t.Fatalf("serve did not report its address: %s", stderr.String())
	}
	code, out, errs := e.run(t, context.Background(), "brain", "ask", "--job", "opportunity_rank", "--focus", "claim-core", "--brain", url)
	if code != 0 || !strings.Contains(out, "brain_insight:opportunity_rank:0") {
		t.Fatalf("ask: exit %d: %s %s", code, out, errs)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %s", code, stderr.String())
	}
}

func TestBrainCheckSchemaCommand(t *testing.T) {
	dir := t.TempDir()
	reg, err := contract.Load(contract.Options{Contracts: seedContracts()})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := reg.Document(brain.SchemaID)
	broken := strings.Replace(string(doc), `"job": { "const": "opportunity_rank" }`, `"job": { "const": "opportunity_react" }`, 1)
	broken = strings.Replace(broken, `"$defs": {`, `"$defs": { "Transcript": { "type": "object", "properties": { "text": { "type": "string" } } },`, 1)
	path := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := strings.Replace(string(doc), `"summary": { "type": "string", "maxLength": 120 }`, `"summary": { "type": "string", "maxLength": 5000 }`, 1)
	loose = strings.Replace(loose, `"privacy_mode": { "const": "local_summary_only" }`, `"privacy_mode": { "$ref": "#/$defs/PrivacyMode" }`, 1)
	loosePath := filepath.Join(dir, "loose.json")
	if loose == string(doc) || os.WriteFile(loosePath, []byte(loose), 0o600) != nil {
		t.Fatal("could not loosen the contract")
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"OK", nil, 0, []string{"ok: 12 jobs"}},
		{"ErrBroken", []string{"--file", path}, exitFailed, []string{
			"$defs/opportunity_rank/in/properties/job: const",
			"$defs/Transcript: neither a job nor a shared definition",
			"/$defs/Transcript: object with properties lacks additionalProperties: false",
		}},
		{"ErrLoosened", []string{"--file", loosePath}, exitFailed, []string{
			"/$defs/FocusNode/properties/summary: maxLength must be at most 120",
			"$defs/select_methodology/in/properties/privacy_mode: const must be",
		}},
		{"ErrMissingFile", []string{"--file", filepath.Join(dir, "none.json")}, exitUsage, nil},
	}
	e := newBrainEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := e.run(t, context.Background(), append([]string{"brain", "check-schema"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s %s", code, tt.code, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errs)
				}
			}
		})
	}
}

func TestBrainUsage(t *testing.T) {
	e := newBrainEnv(t)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"NoSubcommand", []string{"brain"}, exitUsage},
		{"Help", []string{"brain", "help"}, exitOK},
		{"ErrUnknown", []string{"brain", "frobnicate"}, exitUsage},
		{"ErrServeBoth", []string{"brain", "serve", "--stdio", "--addr", ":0"}, exitUsage},
		{"ErrServeNeither", []string{"brain", "serve"}, exitUsage},
		{"ErrImportNoFile", []string{"brain", "import"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := e.run(t, context.Background(), tt.args...); code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errs)
			}
		})
	}
}

// TestServeBrainReviewIsThePrincipals: on the console's Brain page a
// confirmation is recorded in the name of the signed-in operator; a typed
// name is refused.
func TestServeBrainReviewIsThePrincipals(t *testing.T) {
	e := newBrainEnv(t).imported(t)
	env := map[string]string{"CUSTODY_OPERATOR_TOKENS": "maya:operator-secret-0000001"}
	base, _, stop := startServe(t, env, "--data", e.data, "--room", e.room)
	defer stop()
	r, err := brain.OpenRoom(context.Background(), e.room, brain.RoomOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := r.Proposals(context.Background())
	r.Close()
	if err != nil || len(ps) == 0 {
		t.Fatalf("proposals %v (%v)", ps, err)
	}
	id := ps[0].ID
	review := func(form url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/apps/brain/", strings.NewReader(form.Encode()))
		req.Header.Set("Authorization", "Bearer operator-secret-0000001")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := review(url.Values{"id": {id}, "action": {"confirm"}, "user": {"mallory"}}); code != http.StatusBadRequest || strings.Contains(body, "by mallory") {
		t.Fatalf("typed name: %d, want 400:\n%s", code, body)
	}
	if code, body := review(url.Values{"id": {id}, "action": {"confirm"}}); code != http.StatusOK || !strings.Contains(body, "confirmed by maya") {
		t.Fatalf("review: %d, want confirmed by maya:\n%s", code, body)
	}
	page := getBody(t, base+"/apps/brain/", "operator-secret-0000001")
	if !strings.Contains(page, `href="/style.css"`) || !strings.Contains(page, "maya") {
		t.Errorf("page lacks the console stylesheet or the principal:\n%s", page)
	}
}
