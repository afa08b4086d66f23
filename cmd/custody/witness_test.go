package main

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// litewitnessDir returns the directory holding litewitness and
// witnessctl: $CUSTODY_LITEWITNESS_DIR, where .ci/litewitness.sh installs
// them, or $PATH. Empty when they are nowhere.
func litewitnessDir() string {
	home, _ := os.UserHomeDir()
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(home, ".cache")
	}
	for _, dir := range []string{os.Getenv("CUSTODY_LITEWITNESS_DIR"), filepath.Join(cache, "custody", "litewitness-v0.6.1")} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "witnessctl")); err == nil {
			return dir
		}
	}
	lw, err1 := exec.LookPath("litewitness")
	_, err2 := exec.LookPath("witnessctl")
	if err1 != nil || err2 != nil {
		return ""
	}
	return filepath.Dir(lw)
}

// litewitness is a running litewitness process with its key in a
// dedicated ssh-agent.
type litewitness struct {
	dir, db, url, name, vkey string
}

// startLitewitness starts ssh-agent with a new ed25519 key and litewitness
// on a loopback port, both stopped at the end of the test.
func startLitewitness(t *testing.T, bin string) *litewitness {
	t.Helper()
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Skip("ssh-agent not found: litewitness takes its key from one (apt-get install openssh-client)")
	}
	tmp, err := os.MkdirTemp("", "lw") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	sock := filepath.Join(tmp, "agent.sock")
	startProcess(t, exec.Command(agentBin, "-D", "-a", sock))
	// The socket file is there once bound, before the agent listens on
	// it: wait until it takes a connection.
	var conn net.Conn
	waitFor(t, "ssh-agent", func() bool {
		var err error
		conn, err = net.Dial("unix", sock)
		return err == nil
	})
	defer conn.Close()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.NewClient(conn).Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatalf("ssh-add: %v", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	w := &litewitness{dir: bin, db: filepath.Join(tmp, "witness.db"), name: "witness.test/w1"}
	w.vkey, err = note.NewEd25519VerifierKey(w.name, pub)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	w.url = "http://" + addr
	startProcess(t, exec.Command(filepath.Join(bin, "litewitness"), "-db", w.db, "-name", w.name,
		"-key", ssh.FingerprintSHA256(sshPub), "-ssh-agent", sock, "-listen", addr))
	waitFor(t, "litewitness", func() bool {
		res, err := http.Get(w.url + "/")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	return w
}

// follow tells the witness to follow the log named origin, whose
// checkpoints vkey verifies.
func (w *litewitness) follow(t *testing.T, origin, vkey string) {
	t.Helper()
	for _, args := range [][]string{{"add-log", "-db", w.db, "-origin", origin}, {"add-key", "-db", w.db, "-origin", origin, "-key", vkey}} {
		if out, err := exec.Command(filepath.Join(w.dir, "witnessctl"), args...).CombinedOutput(); err != nil {
			t.Fatalf("witnessctl %s: %v\n%s", args[0], err, out)
		}
	}
}

// startProcess starts cmd, logging its output, and ends it at the end of
// the test.
func startProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out := &lockedbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s:\n%s", filepath.Base(cmd.Path), out)
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s did not come up", what)
}

// serveCalls runs serve on data with the witness, makes n calls and stops
// it cleanly; it returns serve's log.
func serveCalls(t *testing.T, data string, w *litewitness, n int) string {
	t.Helper()
	stderr := &lockedbuf.Buffer{}
	base, _, stop := startServeLogged(t, stderr, map[string]string{}, "--data", data, "--witness", w.url+"="+w.vkey)
	callTool(t, base, readToken(t, filepath.Join(data, agentTokenFile)), n)
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr)
	}
	return stderr.String()
}

func callTool(t *testing.T, base, token string, n int) {
	t.Helper()
	for range n {
		req, _ := http.NewRequest("POST", base+"/v1/calls", strings.NewReader(`{"tool":"get_time","arguments":{"zone":"UTC"}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("call: %d", res.StatusCode)
		}
	}
}

// storeOrigin opens the store in data (creating it) and returns its
// origin and the verifier key of its checkpoints.
func storeOrigin(t *testing.T, data string) (origin, vkey string) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vkey, err = tlog.VerifierKey(db.Origin(), db.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return db.Origin(), vkey
}

func TestLitewitnessCosignsAndRefusesARewrite(t *testing.T) {
	bin := litewitnessDir()
	if bin == "" {
		t.Skip("litewitness not found: run .ci/litewitness.sh (or set CUSTODY_LITEWITNESS_DIR)")
	}
	w := startLitewitness(t, bin)
	data := filepath.Join(t.TempDir(), "data")
	origin, logKey := storeOrigin(t, data)
	code, out, errOut := cli(t, data, "ledger", "note-key")
	if code != 0 || out != "origin "+origin+"\nvkey "+logKey+"\n" {
		t.Fatalf("note-key printed %q (%s), want origin %s and vkey %s", out, errOut, origin, logKey)
	}
	w.follow(t, origin, logKey)

	// Two runs of serve: each stop seals a checkpoint the witness cosigns,
	// the second with a consistency proof from the first.
	serveCalls(t, data, w, 3)
	serveCalls(t, data, w, 4)
	notes := storeNotes(t, data)
	if len(notes) < 2 {
		t.Fatalf("%d checkpoint notes, want one per run", len(notes))
	}
	for _, n := range notes {
		if !strings.Contains(string(n.Cosignatures), "— "+w.name+" ") {
			t.Fatalf("checkpoint %d is not cosigned by %s: %q", n.Size, w.name, n.Cosignatures)
		}
	}
	code, out, errOut = cli(t, data, "ledger", "verify", "--witness-key", w.vkey)
	if code != 0 || !strings.Contains(out, "cosigned by at least 1 of 1 witnesses") {
		t.Fatalf("verify --witness-key of the honest ledger: exit %d: %s%s", code, out, errOut)
	}
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, errOut := cli(t, data, "ledger", "verify", "--jsonl", export, "--pubkey", filepath.Join(data, "signing.pub"), "--witness-key", w.vkey); code != 0 {
		t.Fatalf("verify --jsonl --witness-key: exit %d: %s%s", code, out, errOut)
	}

	// Whoever holds the directory rewrites the history after the first
	// checkpoint, consistently, re-signed with the ledger's own key, and
	// keeps the cosignatures that still apply.
	forged := forge(t, data, notes[0].Size, notes[len(notes)-1].Size+5)
	stderr := &lockedbuf.Buffer{}
	base, _, stop := startServeLogged(t, stderr, map[string]string{}, "--data", forged, "--witness", w.url+"="+w.vkey)
	var health struct {
		Status    string               `json:"status"`
		Witnesses []tlog.WitnessStatus `json:"witnesses"`
	}
	waitFor(t, "the witness's refusal", func() bool {
		getJSON(t, base+"/healthz", &health)
		return health.Status == "degraded"
	})
	if len(health.Witnesses) != 1 || !health.Witnesses[0].Refused || health.Witnesses[0].Cosigned != notes[0].Size {
		t.Fatalf("/healthz: %+v", health)
	}
	metrics := getText(t, base+"/metrics")
	if !strings.Contains(metrics, `custody_witness_refused{witness="witness.test/w1"} 1`) || strings.Contains(metrics, `custody_witness_refusals_total{witness="witness.test/w1"} 0`) {
		t.Fatalf("/metrics does not count the refusal:\n%s", metrics)
	}
	stop()
	if !strings.Contains(stderr.String(), "a witness refused to cosign") {
		t.Fatalf("serve did not log the refusal:\n%s", stderr)
	}
	forgedNotes := storeNotes(t, forged)
	var firstForged uint64
	for _, n := range forgedNotes {
		if n.Size > notes[0].Size {
			firstForged = n.Size
			break
		}
	}
	code, _, errOut = cli(t, forged, "ledger", "verify", "--witness-key", w.vkey)
	want := fmt.Sprintf("FAILED at checkpoint %d: lacks a consistent cosignature", firstForged)
	if code != exitFailed || !strings.Contains(errOut, want) {
		t.Fatalf("verify --witness-key of the rewrite: exit %d, want %q: %s", code, want, errOut)
	}
	// Without the witness, the rewrite verifies: the key alone cannot tell.
	if code, out, errOut := cli(t, forged, "ledger", "verify"); code != 0 {
		t.Fatalf("the rewrite does not even verify on its own: %s%s", out, errOut)
	}
}

func storeNotes(t *testing.T, data string) []sqlite.Note {
	t.Helper()
	db, err := sqlite.Open(context.Background(), data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ns, err := db.Notes(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// forge copies data and rewrites its history after entry keep: the tail
// is cut and different entries appended up to size, signed with the same
// key. Cosignatures of the checkpoints up to keep are kept.
func forge(t *testing.T, data string, keep, size uint64) string {
	t.Helper()
	forged := filepath.Join(t.TempDir(), "forged")
	if err := os.CopyFS(forged, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.db", "index.db-wal", "index.db-shm"} {
		os.Remove(filepath.Join(forged, f))
	}
	// Whoever holds the directory and its key rewrites its own record of
	// the last checkpoint too: only a witness keeps one out of reach.
	os.Remove(filepath.Join(forged, "last-checkpoint.json"))
	os.Chmod(forged, 0o700) // CopyFS does not keep modes
	files, _ := os.ReadDir(forged)
	for _, f := range files {
		os.Chmod(filepath.Join(forged, f.Name()), 0o600)
	}
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(forged, sqlite.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TRIGGER entries_no_delete`,
		fmt.Sprintf(`DELETE FROM entries WHERE seq > %d`, keep),
		fmt.Sprintf(`DELETE FROM checkpoints WHERE size > %d`, keep),
		fmt.Sprintf(`DELETE FROM tlog_checkpoints WHERE size > %d`, keep),
		fmt.Sprintf(`DELETE FROM tlog_cosignatures WHERE size > %d`, keep),
		`DELETE FROM tlog_nodes`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := sqlite.Open(context.Background(), forged, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := keep; i < size; i++ {
		if _, err := db.Append(context.Background(), sampleEntry(int(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	return forged
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(getText(t, url)), v); err != nil {
		t.Fatal(err)
	}
}

func getText(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServeWitnessSettings(t *testing.T) {
	_, k1 := newWitnessKey(t, "witness.test/a")
	_, k2 := newWitnessKey(t, "witness.test/b")
	cfg := writeFile(t, t.TempDir(), "config.json", `{"witnesses":[{"url":"http://127.0.0.1:7380","key":"`+k1+`"}]}`)
	settings := func(env map[string]string, args ...string) (serveSettings, int, bool) {
		var stderr strings.Builder
		m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
		return m.serveFlags(args)
	}
	set, _, ok := settings(nil, "--config", cfg)
	if !ok || len(set.witnesses) != 1 || set.witnesses[0].Key != k1 {
		t.Fatalf("from the config file: %+v", set.witnesses)
	}
	env := map[string]string{"CUSTODY_WITNESSES": "http://127.0.0.1:1=" + k1 + " http://127.0.0.1:2=" + k2}
	if set, _, ok = settings(env, "--config", cfg); !ok || len(set.witnesses) != 2 || set.witnesses[1].URL != "http://127.0.0.1:2" {
		t.Fatalf("from the environment: %+v", set.witnesses)
	}
	if set, _, ok = settings(env, "--witness", "http://127.0.0.1:3="+k2); !ok || len(set.witnesses) != 1 || set.witnesses[0].Key != k2 {
		t.Fatalf("from the flag: %+v", set.witnesses)
	}
	for _, bad := range []string{"127.0.0.1:3=" + k2, "http://127.0.0.1:3", "http://127.0.0.1:3="} {
		if _, code, ok := settings(nil, "--witness", bad); ok || code != exitUsage {
			t.Errorf("--witness %q accepted", bad)
		}
	}
	if _, err := witnesses([]witnessConfig{{URL: "http://127.0.0.1:3", Key: "not-a-key"}}); err == nil {
		t.Error("a witness with a malformed key accepted")
	}
}
