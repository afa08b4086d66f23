package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReceiptsRecipe runs the Go program docs/receipts.md gives, built
// against the module versions custody itself requires, on a witnessed
// receipt: it accepts it, and refuses it for a witness that did not
// cosign.
func TestReceiptsRecipe(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found: the recipe is built with the go command")
	}
	doc := string(mustRead(t, filepath.Join("..", "..", "docs", "receipts.md")))
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/receipts.md holds no Go program")
	}
	gomod := string(mustRead(t, filepath.Join("..", "..", "go.mod")))
	var requires []string
	for _, mod := range []string{"github.com/transparency-dev/merkle", "golang.org/x/mod"} {
		v := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindStringSubmatch(gomod)
		if v == nil {
			t.Fatalf("go.mod does not require %s", mod)
		}
		requires = append(requires, mod+" "+v[1])
	}
	dir := t.TempDir()
	writeFile(t, dir, "check.go", m[1])
	writeFile(t, dir, "go.mod", "module recipe\n\ngo 1.26.0\n\nrequire (\n\t"+strings.Join(requires, "\n\t")+"\n)\n")
	writeFile(t, dir, "go.sum", string(mustRead(t, filepath.Join("..", "..", "go.sum"))))

	const w1 = "witness.test/w1"
	data := ledgerWithCheckpoints(t, 20)
	priv, vkey := newWitnessKey(t, w1)
	_, vkey2 := newWitnessKey(t, "witness.test/w2")
	cosignLatest(t, data, w1, priv)
	code, receipt, errOut := cli(t, data, "ledger", "prove", "--seq", "7")
	if code != 0 {
		t.Fatalf("prove: %s", errOut)
	}
	_, logKey := storeOrigin(t, data)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(goBin, append([]string{"run", "."}, args...)...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(receipt)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(logKey, vkey); err != nil || !strings.HasPrefix(out, "ok: entry 7 is in checkpoint 20 ") {
		t.Fatalf("the recipe refused a witnessed receipt: %v\n%s", err, out)
	}
	if out, err := run(logKey, vkey, vkey2); err == nil {
		t.Fatalf("the recipe accepted a receipt a witness did not cosign:\n%s", out)
	}
}
