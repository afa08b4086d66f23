package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreBackupBesideServe backs a data directory up while serve runs
// on it; the backup verifies on its own and serves.
func TestStoreBackupBesideServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, map[string]string{}, "--data", data)
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	for range 5 {
		post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{}}`, 200)
	}
	dest := filepath.Join(t.TempDir(), "backup")
	code, out, errOut := runMain(t, nil, "", "store", "backup", "--data", data, "--to", dest)
	if code != exitOK || !strings.Contains(out, "backed up") {
		t.Fatalf("store backup: exit %d\n%s%s", code, out, errOut)
	}
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{}}`, 200)
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}

	// The entries since serve's last checkpoint are vouched for by the
	// directory's key, not yet by a signature: the serve that restores the
	// backup signs them.
	if code, out, errOut := runMain(t, nil, "", "ledger", "verify", "--allow-unsealed-tail", "--data", dest); code != exitOK {
		t.Fatalf("verify the backup: exit %d\n%s%s", code, out, errOut)
	}
	// Tokens are configuration, not evidence: the restored directory
	// serves with the ones it is given.
	env := map[string]string{"CUSTODY_AGENT_TOKENS": "bot:agent-secret-0000000001"}
	base, _, stop = startServe(t, env, "--data", dest)
	post(t, base+"/v1/calls", "agent-secret-0000000001", `{"tool":"get_time","arguments":{}}`, 200)
	if code := stop(); code != exitOK {
		t.Fatalf("serve on the backup: exit %d", code)
	}
	if code, out, errOut := runMain(t, nil, "", "ledger", "verify", "--data", dest); code != exitOK {
		t.Fatalf("verify the restored ledger: exit %d\n%s%s", code, out, errOut)
	}

	// A used directory is refused, and its files left alone.
	code, _, errOut = runMain(t, nil, "", "store", "backup", "--data", data, "--to", dest)
	if code == exitOK || !strings.Contains(errOut, "not empty") {
		t.Fatalf("backup into a used directory: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, "custody.db")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runMain(t, nil, "", "store", "backup", "--data", data); code != exitUsage {
		t.Fatalf("backup without --to: exit %d: %s", code, errOut)
	}
}
