package main

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/internal/mcptest"
)

// The person who authorizes custody at the provider of the upstream
// "notes", and the auditor of this custody.
const (
	notesUser     = "u-nia"
	notesUsername = "nia"
	notesPassword = "nia-password-0001"
	connAuditor   = "auditor-secret-connect-01"
)

// connectSetup is serve fronting "notes", an MCP server that takes only
// a person's token of its provider, which registers any client that
// asks (RFC 7591).
type connectSetup struct {
	op   *idptest.OP
	p    *idptest.Protected
	base string
	data string
	cfg  string
	env  map[string]string
	log  *lockedbuf.Buffer
	stop func() int
}

// startConnect runs the provider, the upstream and serve, with tokens
// that last lifetime (the provider's default when zero).
func startConnect(t *testing.T, lifetime time.Duration) *connectSetup {
	t.Helper()
	op := idptest.Start(t, "")
	s := mcptest.Server(mcptest.Options{})
	p := op.Protect(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	op.OfferRegistration(idptest.App{Audience: []string{p.URL}, Lifetime: lifetime})
	op.AddUser(idptest.User{ID: notesUser, Username: notesUsername, Password: notesPassword, Name: "Nia Notes"})
	e := &connectSetup{op: op, p: p, data: filepath.Join(t.TempDir(), "data"), log: &lockedbuf.Buffer{},
		env: withEnv(map[string]string{"CUSTODY_AUDITOR_TOKENS": "aud:" + connAuditor})}
	e.cfg = writeConfig(t, map[string]any{
		"mcpServers": map[string]any{"notes": map[string]any{"url": p.URL, "oauth": map[string]any{"grant": "authorization_code"}}},
		"tools":      map[string]any{"notes__echo": map[string]any{"access": "READ", "effect": "NONE"}},
	})
	e.start(t)
	return e
}

// writeConfig writes cfg as a configuration file.
func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	return writeFile(t, t.TempDir(), "custody.json", string(raw))
}

func (e *connectSetup) start(t *testing.T) {
	t.Helper()
	e.base, _, e.stop = startServeLogged(t, e.log, e.env, "--data", e.data, "--config", e.cfg)
}

// health returns /healthz's upstreams_down.
func (e *connectSetup) health(t *testing.T) []map[string]any {
	t.Helper()
	_, body := fetch(t, e.base+"/healthz", "")
	var h struct {
		Down []map[string]any `json:"upstreams_down"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("/healthz: %v: %s", err, body)
	}
	return h.Down
}

// waitUp waits for the upstream to be up and its tool served: /healthz
// says so once its session is up, and the doors serve its tools once
// they are built again with its listing.
func (e *connectSetup) waitUp(t *testing.T) {
	t.Helper()
	eventually(t, "the upstream to come up", func() bool { return len(e.health(t)) == 0 })
	eventually(t, "notes__echo to be served", func() bool {
		code, _ := postCode(t, e.base+"/v1/calls", upAgent, `{"tool":"notes__echo","arguments":{"message":"up?"}}`)
		return code == 200
	})
}

// begin starts a connection as the operator in a browser of its own (a
// cookie jar) and returns it with the provider's URL.
func (e *connectSetup) begin(t *testing.T) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodPost, e.base+"/v1/upstreams/notes/connect", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+upOperator)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		URL string `json:"authorization_url"`
	}
	if json.NewDecoder(res.Body).Decode(&out); res.StatusCode != 200 || !strings.HasPrefix(out.URL, e.op.URL+"/") {
		t.Fatalf("connect: %d, to %q", res.StatusCode, out.URL)
	}
	return c, out.URL
}

// land opens the URL the provider sent the browser back to.
func land(t *testing.T, c *http.Client, back *url.URL) (int, string) {
	t.Helper()
	res, err := c.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, b.String()
}

// TestUpstreamConnect: an upstream that takes a person's token is down
// with "connect" until an operator connects it; an auditor or an agent
// may not; the operator's browser goes to the provider found from the
// upstream's own metadata, where custody registered itself, and back
// with a code; the connection is on the ledger under the operator before
// any call uses it; the upstream sees custody's token only, never the
// agent's; a forged or replayed answer connects nothing; a restart keeps
// the connection.
func TestUpstreamConnect(t *testing.T) {
	e := startConnect(t, 0)
	defer func() { e.stop() }()
	down := e.health(t)
	if len(down) != 1 || down[0]["name"] != "notes" || down[0]["connect"] != true || !strings.Contains(down[0]["error"].(string), "not connected") {
		t.Fatalf("before connecting /healthz says %v", down)
	}
	if ans := callJSON(t, e.base, upAgent, `{"tool":"notes__echo","arguments":{"message":"too soon"}}`, 503); !strings.Contains(toJSON(ans), "not connected") {
		t.Fatalf("a call before connecting: %v", ans)
	}
	if code, out, errOut := cli(t, t.TempDir(), "config", "check", e.cfg); code != 0 || !strings.Contains(out, "upstream notes waits for an operator to connect it") {
		t.Fatalf("config check: %d\n%s%s", code, out, errOut)
	}
	post(t, e.base+"/v1/upstreams/notes/connect", connAuditor, "{}", 403)
	post(t, e.base+"/v1/upstreams/notes/connect", upAgent, "{}", 403)
	post(t, e.base+"/v1/upstreams/nope/connect", upOperator, "{}", 404)

	t.Run("ErrForgedState", func(t *testing.T) {
		c, to := e.begin(t)
		back := e.op.Login(t, nil, to, notesUsername, notesPassword)
		q := back.Query()
		q.Set("state", "forged")
		back.RawQuery = q.Encode()
		if code, page := land(t, c, back); code != 403 || !strings.Contains(page, "not for the connection this browser started") {
			t.Fatalf("a forged state: %d %s", code, page)
		}
	})
	t.Run("ErrOtherBrowser", func(t *testing.T) {
		_, to := e.begin(t)
		back := e.op.Login(t, nil, to, notesUsername, notesPassword)
		jar, _ := cookiejar.New(nil)
		if code, _ := land(t, &http.Client{Jar: jar}, back); code != 400 {
			t.Fatalf("the answer opened in another browser: %d", code)
		}
	})
	if len(e.health(t)) != 1 {
		t.Fatal("a refused answer connected the upstream")
	}

	c, to := e.begin(t)
	back := e.op.Login(t, nil, to, notesUsername, notesPassword)
	if code, page := land(t, c, back); code != 200 || !strings.Contains(page, "is connected") {
		t.Fatalf("the answer: %d %s", code, page)
	}
	if code, _ := land(t, c, back); code != 400 {
		t.Fatalf("the answer opened twice: %d", code)
	}
	e.waitUp(t)
	agent := upAgent
	ans := callJSON(t, e.base, agent, `{"tool":"notes__echo","arguments":{"message":"connected"}}`, 200)
	if !strings.Contains(toJSON(ans), "connected") {
		t.Fatalf("the call's answer: %v", ans)
	}
	onlyCustodysTokens(t, e.p, agent, upOperator)

	code, page := fetch(t, e.base+"/v1/ledger?kind=upstream.connected", upOperator)
	var l struct {
		Entries []struct {
			Actor string            `json:"actor"`
			Refs  map[string]string `json:"refs"`
			Body  struct {
				Connection map[string]any `json:"connection"`
			} `json:"body"`
		} `json:"entries"`
	}
	json.Unmarshal([]byte(page), &l)
	if code != 200 || len(l.Entries) != 1 {
		t.Fatalf("upstream.connected entries: %d %s", code, page)
	}
	en := l.Entries[0]
	reg := e.op.Registered()
	if en.Actor != "ana" || en.Refs["upstream"] != "notes" || en.Body.Connection["client_id"] != reg[len(reg)-1] ||
		en.Body.Connection["issuer"] != e.op.Issuer || en.Body.Connection["refresh_token"] != true {
		t.Fatalf("the entry: %s", page)
	}
	for _, tok := range e.p.Admitted() {
		if strings.Contains(page, tok) {
			t.Fatal("the ledger holds custody's token")
		}
	}

	// A restart connects with the refresh token kept, and no operator.
	e.stop()
	registered := len(e.op.Registered())
	e.start(t)
	e.waitUp(t)
	callJSON(t, e.base, agent, `{"tool":"notes__echo","arguments":{"message":"again"}}`, 200)
	if len(e.op.Registered()) != registered {
		t.Fatal("custody registered itself again after a restart")
	}
	onlyCustodysTokens(t, e.p, agent, upOperator)
}

// TestUpstreamConnectSignedOut: once the provider ends the person's
// authorization, the refresh is refused, and the upstream is down again
// with "connect".
func TestUpstreamConnectSignedOut(t *testing.T) {
	e := startConnect(t, 2*time.Second)
	defer func() { e.stop() }()
	c, to := e.begin(t)
	if code, page := land(t, c, e.op.Login(t, nil, to, notesUsername, notesPassword)); code != 200 {
		t.Fatalf("the answer: %d %s", code, page)
	}
	e.waitUp(t)
	eventually(t, "a refreshed token used", func() bool {
		callJSON(t, e.base, upAgent, `{"tool":"notes__echo","arguments":{"message":"tick"}}`, 200)
		return len(e.p.Admitted()) >= 2
	})
	reg := e.op.Registered()
	e.op.SignOut(t, notesUser, reg[len(reg)-1])
	eventually(t, "the upstream down, to be connected again", func() bool {
		d := e.health(t)
		return len(d) == 1 && d[0]["connect"] == true
	})
}

// TestUpstreamConnectBrowser: an operator signed in to the console sees
// the upstream down with a Connect button, presses it, signs in at the
// provider, and lands on custody's page saying it is connected.
func TestUpstreamConnectBrowser(t *testing.T) {
	e := startConnect(t, 0)
	defer func() { e.stop() }()
	ctx := browsertest.Start(t, 2*time.Minute)
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.base+"/login"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-token]`), upOperator),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=connect-notes]`)),
	)
	if err != nil {
		t.Fatalf("the console's Connect button: %v", err)
	}
	if os.Getenv("CUSTODY_TEST_AXE") != "" {
		browsertest.CheckAxe(t, ctx, browsertest.Axe(t), "the console with an upstream to connect")
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=connect-notes]`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), notesUsername),
		chromedp.SendKeys(chromedp.CSS(`#password`), notesPassword),
		chromedp.Click(chromedp.CSS(`#idp-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=connect-done]`)),
	)
	if err != nil {
		t.Fatalf("connect in the browser: %v\n%s", err, e.log)
	}
	done, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=connect-done]`)))
	if err != nil || !strings.Contains(done, "notes") {
		t.Fatalf("the page says %q", done)
	}
	if os.Getenv("CUSTODY_TEST_AXE") != "" {
		browsertest.CheckAxe(t, ctx, browsertest.Axe(t), "the upstream connected page")
	}
	e.waitUp(t)
	callJSON(t, e.base, upAgent, `{"tool":"notes__echo","arguments":{"message":"from the browser"}}`, 200)
}
