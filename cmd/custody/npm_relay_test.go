package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReferenceResourcesAndPrompts relays the everything server's
// resources and prompts through custody serve's MCP door, and checks each
// crossing on the ledger against what the server really returned.
func TestReferenceResourcesAndPrompts(t *testing.T) {
	bin := referenceServers(t)
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{"everything": map[string]any{"url": startEverything(t, bin)}},
		"tools":      map[string]any{"everything__echo": map[string]any{"access": "READ", "effect": "NONE"}},
		"resources":  map[string]any{"everything+*": map[string]any{"access": "READ"}},
		"prompts":    map[string]any{"everything__*": map[string]any{}},
	}
	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "custody.json")
	os.WriteFile(cfgPath, raw, 0o600)
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfgPath)
	defer stop()
	cs := mcpSession(t, base, upAgent)
	ctx := context.Background()

	t.Run("ReadRecorded", func(t *testing.T) {
		list, err := cs.ListResources(ctx, nil)
		if err != nil || len(list.Resources) == 0 {
			t.Fatalf("resources %+v %v", list, err)
		}
		uri := list.Resources[0].URI
		if !strings.HasPrefix(uri, "everything+") {
			t.Fatalf("resource %q is not exposed as SERVER+URI", uri)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) == 0 {
			t.Fatalf("read %s: %+v %v", uri, res, err)
		}
		body := lastEntryBody(t, base, "call.succeeded")
		if !strings.Contains(body, `"tool":"resources/read:everything+*"`) || !strings.Contains(body, digestOf(t, res.Contents)) {
			t.Errorf("entry %s: want the read route and the SHA-256 of the contents", body)
		}
	})
	t.Run("GetRecorded", func(t *testing.T) {
		list, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var name string
		for _, p := range list.Prompts {
			required := false
			for _, a := range p.Arguments {
				required = required || a.Required
			}
			if !required && strings.HasPrefix(p.Name, "everything__") {
				name = p.Name
				break
			}
		}
		if name == "" {
			t.Fatalf("no prompt without required arguments in %+v", list.Prompts)
		}
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("get %s: %+v %v", name, res, err)
		}
		body := lastEntryBody(t, base, "call.succeeded")
		if !strings.Contains(body, `"tool":"prompts/get:`+name+`"`) || !strings.Contains(body, digestOf(t, res.Messages)) {
			t.Errorf("entry %s: want the prompt route and the SHA-256 of the messages", body)
		}
		if pinned := lastEntryBody(t, base, "prompt.pinned"); !strings.Contains(pinned, `"prompt":"everything__`) {
			t.Errorf("prompt.pinned %s", pinned)
		}
	})
	t.Run("ErrUngovernedDenied", func(t *testing.T) {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "elsewhere+file:///etc/passwd"})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || !strings.Contains(we.Message, "denied") {
			t.Fatalf("an ungoverned read: %v", err)
		}
		if body := lastEntryBody(t, base, "call.refused"); !strings.Contains(body, "elsewhere+file:///etc/passwd") {
			t.Errorf("refusal entry %s", body)
		}
	})
	t.Run("Ledger", func(t *testing.T) {
		if body := getBody(t, base+"/v1/ledger/verify", upOperator); !strings.Contains(body, `"ok":true`) {
			t.Errorf("verify: %s", body)
		}
	})
}

// digestOf is the hex SHA-256 of v's JSON, as the relay records it.
func digestOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// lastEntryBody returns the body of the last ledger entry of kind, read
// through the API as an auditor would.
func lastEntryBody(t *testing.T, base, kind string) string {
	t.Helper()
	var ans struct {
		Entries []struct {
			Body json.RawMessage `json:"body"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/v1/ledger?limit=500&kind="+kind, upOperator)), &ans); err != nil || len(ans.Entries) == 0 {
		t.Fatalf("no %s entry (%v)", kind, err)
	}
	return string(ans.Entries[len(ans.Entries)-1].Body)
}
