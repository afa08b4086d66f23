package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/lockedbuf"
)

const (
	consoleAgentToken    = "agent-secret-0000000001"
	consoleOperatorToken = "operator-secret-000001"
	consoleSecret        = "console-client-secret"
)

// consoleIdP is custody serve whose console signs people in at a real
// OpenID provider.
type consoleIdP struct {
	idp  *idptest.OP
	base string
	log  *lockedbuf.Buffer
}

// startConsoleIdP runs a provider with an operator (ana, in ops), an
// auditor (bo, in audit) and someone of neither (cy), custody's console
// client registered with the callback under custody's resource, and
// custody serve on that resource's address.
func startConsoleIdP(t *testing.T) consoleIdP {
	t.Helper()
	idp := idptest.Start(t, "")
	for _, u := range []idptest.User{
		{ID: "u-ana", Username: "ana", Password: "ana-password", Name: "Ana Operator", Groups: []string{"staff", "ops"}},
		{ID: "u-bo", Username: "bo", Password: "bo-password", Name: "Bo Auditor", Groups: []string{"audit"}},
		{ID: "u-cy", Username: "cy", Password: "cy-password", Name: "Cy Nobody", Groups: []string{"staff"}},
	} {
		idp.AddUser(u)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "custody-console", Secret: consoleSecret, RedirectURIs: []string{base + "/login/oidc/callback"}})
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "other-app", Secret: "other-secret", RedirectURIs: []string{base + "/login/oidc/callback"}})
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"tokens": {"agent": ["bot:`+consoleAgentToken+`"], "operator": ["static-op:`+consoleOperatorToken+`"]},
		"auth": {"resource": "`+base+`", "issuers": [{"issuer": "`+idp.Issuer+`"}],
			"console": {"issuer": "`+idp.Issuer+`", "clientId": "custody-console", "clientSecret": "${env:CONSOLE_SECRET}",
				"rolesClaim": "groups", "operators": ["ops"], "auditors": ["audit"]}}}`), 0o600)
	stderr := &lockedbuf.Buffer{}
	got, out, stop := startServeLogged(t, stderr, map[string]string{"CONSOLE_SECRET": consoleSecret}, "--data", t.TempDir(), "--config", cfg, "--addr", addr)
	t.Cleanup(func() {
		stop()
		// No secret, token (a JWT begins eyJ) or code is printed or logged.
		for _, leak := range []string{consoleSecret, "eyJ", "code="} {
			if strings.Contains(out.String()+stderr.String(), leak) {
				t.Errorf("serve printed or logged %q:\n%s", leak, stderr)
			}
		}
	})
	if got != base {
		t.Fatalf("serve on %s, want %s", got, base)
	}
	return consoleIdP{idp: idp, base: base, log: stderr}
}

// hold makes the agent's call that waits for an operator and returns its
// approval's id.
func (e consoleIdP) hold(t *testing.T) string {
	t.Helper()
	body := post(t, e.base+"/v1/calls", consoleAgentToken, `{"tool":"post_announcement","arguments":{"channel":"ops","message":"DEPLOY AT 5"}}`, 202)
	var res struct {
		Error struct {
			ID string `json:"approval_request_id"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(body), &res)
	id := res.Error.ID
	if id == "" {
		t.Fatalf("no approval in %s", body)
	}
	return id
}

// decision returns the approval.decided entry of approval id.
func (e consoleIdP) decision(t *testing.T, id string) (actor string, body map[string]any, raw string) {
	t.Helper()
	code, page := fetch(t, e.base+"/v1/ledger?kind=approval.decided", consoleOperatorToken)
	if code != 200 {
		t.Fatalf("ledger: %d %s", code, page)
	}
	var l struct {
		Entries []struct {
			Actor string         `json:"actor"`
			Body  map[string]any `json:"body"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(page), &l); err != nil {
		t.Fatal(err)
	}
	for _, en := range l.Entries {
		if en.Body["approval_request_id"] == id {
			return en.Actor, en.Body, page
		}
	}
	t.Fatalf("no decision of %s on the ledger: %s", id, page)
	return "", nil, ""
}

func TestConsoleIdPBrowser(t *testing.T) {
	e := startConsoleIdP(t)
	ctx := browsertest.Start(t, 2*time.Minute)
	id := e.hold(t)
	card := `[data-testid=approval][data-id="` + id + `"]`
	// axe-core checks the pages this sign-in adds, where CI has it.
	axe := func(page string) {
		if os.Getenv("CUSTODY_TEST_AXE") != "" {
			browsertest.CheckAxe(t, ctx, browsertest.Axe(t), page)
		}
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-idp]`)),
	)
	if err != nil {
		t.Fatalf("the sign-in page: %v", err)
	}
	axe("sign-in page with the IdP")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=login-idp]`)),
		// The provider's own login page.
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), "ana"),
		chromedp.SendKeys(chromedp.CSS(`#password`), "ana-password"),
		chromedp.Click(chromedp.CSS(`#idp-submit`)),
		// Back at the console, signed in.
		chromedp.WaitVisible(chromedp.CSS(`#logout`)),
		chromedp.WaitVisible(chromedp.CSS(card)),
		chromedp.SetValue(chromedp.CSS(card+` [data-testid=note]`), "as planned"),
		chromedp.Click(chromedp.CSS(card+` [data-testid=approve]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	)
	if err != nil {
		t.Fatalf("sign in at the provider and approve: %v", err)
	}
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#principal`)))
	if err != nil || !strings.Contains(who, e.idp.Issuer+"#u-ana") || !strings.Contains(who, "Ana Operator") {
		t.Errorf("the console shows %q (%v), want the operator's name and the provider's issuer#subject", who, err)
	}
	actor, body, raw := e.decision(t, id)
	if actor != e.idp.Issuer+"#u-ana" || body["operator_id"] != e.idp.Issuer+"#u-ana" || body["operator_name"] != "Ana Operator" || body["decision"] != "approved" {
		t.Errorf("decision entry: actor %q body %v, want issuer#u-ana named Ana Operator", actor, body)
	}
	if strings.Contains(raw, consoleSecret) || strings.Contains(raw, "eyJ") {
		t.Error("the ledger holds a secret or a token")
	}

	// Someone the roles claim gives no role is refused and not signed in.
	err = chromedp.Do(ctx,
		chromedp.Navigate(e.base+"/"),
		chromedp.Click(chromedp.CSS(`#logout button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-idp]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=login-idp]`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), "cy"),
		chromedp.SendKeys(chromedp.CSS(`#password`), "cy-password"),
		chromedp.Click(chromedp.CSS(`#idp-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-problem]`)),
	)
	if err != nil {
		t.Fatalf("sign in as cy: %v", err)
	}
	axe("the IdP sign-in's refusal")
	problem, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=login-problem]`)))
	if !strings.Contains(problem, "Cy Nobody") || !strings.Contains(problem, "no role") {
		t.Errorf("refusal page says %q", problem)
	}
	me, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/v1/console").then(r => r.status)`, chromedp.EvalAwaitPromise))
	if me != http.StatusUnauthorized {
		t.Errorf("after the refusal /v1/console answers %d, want 401: no session", me)
	}
}

// browser is a cookie jar and a client that does not follow redirects,
// as a browser between custody and the provider.
type browser struct {
	jar    http.CookieJar
	client *http.Client
}

func newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{jar: jar, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	res, err := b.client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// start starts a sign-in at custody and returns the provider's
// authorization URL custody sent the browser to.
func (b *browser) start(t *testing.T, e consoleIdP) *url.URL {
	t.Helper()
	res, _ := b.get(t, e.base+"/login/oidc")
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), e.idp.URL+"/") {
		t.Fatalf("GET /login/oidc: %d to %q, want the provider", res.StatusCode, res.Header.Get("Location"))
	}
	return loc
}

func TestConsoleIdPSignIn(t *testing.T) {
	e := startConsoleIdP(t)
	tamper := func(auth *url.URL, set map[string]string) string {
		q := auth.Query()
		for k, v := range set {
			if v == "" {
				q.Del(k)
			} else {
				q.Set(k, v)
			}
		}
		u := *auth
		u.RawQuery = q.Encode()
		return u.String()
	}
	tests := []struct {
		name string
		// run signs in at the provider and returns the browser that gets
		// the provider's answer, and the answer.
		run    func(t *testing.T) (*browser, string)
		status int
		says   string
	}{
		{"Operator", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			return b, e.idp.Login(t, nil, b.start(t, e).String(), "ana", "ana-password").String()
		}, 200, "Signed in as"},
		{"NoRole", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			return b, e.idp.Login(t, nil, b.start(t, e).String(), "cy", "cy-password").String()
		}, 403, "gives you no role here"},
		{"StateOfAnotherBrowser", func(t *testing.T) (*browser, string) {
			// Login fixation: the attacker's answer, opened by a victim
			// whose browser started a sign-in of its own.
			attacker, victim := newBrowser(), newBrowser()
			answer := e.idp.Login(t, nil, attacker.start(t, e).String(), "cy", "cy-password")
			victim.start(t, e)
			return victim, answer.String()
		}, 403, "not for the sign-in this browser started"},
		{"StateTampered", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			answer := e.idp.Login(t, nil, b.start(t, e).String(), "ana", "ana-password")
			q := answer.Query()
			q.Set("state", "guessed")
			answer.RawQuery = q.Encode()
			return b, answer.String()
		}, 403, "not for the sign-in this browser started"},
		{"NotStartedHere", func(t *testing.T) (*browser, string) {
			answer := e.idp.Login(t, nil, newBrowser().start(t, e).String(), "ana", "ana-password")
			return newBrowser(), answer.String()
		}, 400, "not started in this browser"},
		{"PKCEStripped", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			auth := tamper(b.start(t, e), map[string]string{"code_challenge": "", "code_challenge_method": ""})
			return b, e.idp.Login(t, nil, auth, "ana", "ana-password").String()
		}, 401, "code_verifier"},
		{"NonceSwapped", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			auth := tamper(b.start(t, e), map[string]string{"nonce": "another-sign-in-nonce"})
			return b, e.idp.Login(t, nil, auth, "ana", "ana-password").String()
		}, 401, "nonce is not this sign-in"},
		{"CodeOfAnotherClient", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			auth := tamper(b.start(t, e), map[string]string{"client_id": "other-app"})
			return b, e.idp.Login(t, nil, auth, "ana", "ana-password").String()
		}, 401, "refused the sign-in"},
		{"ProviderError", func(t *testing.T) (*browser, string) {
			b := newBrowser()
			state := b.start(t, e).Query().Get("state")
			return b, e.base + "/login/oidc/callback?error=access_denied&error_description=not+today&state=" + state
		}, 401, "did not sign you in: access_denied (not today)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, answer := tt.run(t)
			if !strings.HasPrefix(answer, e.base+"/login/oidc/callback?") {
				t.Fatalf("the provider answered %s", answer)
			}
			res, body := b.get(t, answer)
			if res.StatusCode != tt.status || !strings.Contains(body, tt.says) {
				t.Fatalf("callback: %d, want %d saying %q:\n%s", res.StatusCode, tt.status, tt.says, body)
			}
			code, me := b.consoleStatus(t, e)
			if signedIn := code == 200; signedIn != (tt.status == 200) {
				t.Fatalf("/v1/console after the callback: %d %s", code, me)
			}
			if tt.status == 200 && (!strings.Contains(me, `"id":"`+e.idp.Issuer+`#u-ana"`) || !strings.Contains(me, `"name":"Ana Operator"`) || !strings.Contains(me, `"role":"operator"`)) {
				t.Errorf("/v1/console: %s", me)
			}
			// The answer works once: its sign-in's cookie is gone.
			if res, _ := b.get(t, answer); tt.status == 200 && res.StatusCode != http.StatusBadRequest {
				t.Errorf("the answer replayed: %d, want 400", res.StatusCode)
			}
		})
	}
	for _, why := range []string{"no console role", "the state is not this browser's", "no sign-in started in this browser", "nonce", "code_verifier"} {
		if !strings.Contains(e.log.String(), why) {
			t.Errorf("the log does not say %q:\n%s", why, e.log)
		}
	}
}

// consoleStatus asks /v1/console with the browser's cookies.
func (b *browser) consoleStatus(t *testing.T, e consoleIdP) (int, string) {
	t.Helper()
	res, body := b.get(t, e.base+"/v1/console")
	return res.StatusCode, body
}

// signedIn signs username in at the provider in a fresh browser.
func (e consoleIdP) signedIn(t *testing.T, username string) *browser {
	t.Helper()
	b := newBrowser()
	answer := e.idp.Login(t, nil, b.start(t, e).String(), username, username+"-password")
	if res, body := b.get(t, answer.String()); res.StatusCode != 200 {
		t.Fatalf("sign in %s: %d %s", username, res.StatusCode, body)
	}
	return b
}

func TestConsoleIdPRoles(t *testing.T) {
	e := startConsoleIdP(t)
	id := e.hold(t)
	bo := e.signedIn(t, "bo")
	if code, body := bo.consoleStatus(t, e); code != 200 || !strings.Contains(body, `"role":"auditor"`) {
		t.Fatalf("the auditor's console: %d %s", code, body)
	}
	if res, body := bo.get(t, e.base+"/v1/approvals?status=pending"); res.StatusCode != 200 || !strings.Contains(body, id) {
		t.Errorf("the auditor reads the approvals: %d %s", res.StatusCode, body)
	}
	decide := func(b *browser) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/v1/approvals/"+id+"/decision", strings.NewReader(`{"decision":"approved"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if code, body := decide(bo); code != http.StatusForbidden || !strings.Contains(body, "auditor role may not") {
		t.Errorf("the auditor decided: %d %s", code, body)
	}
	ana := e.signedIn(t, "ana")
	if code, body := decide(ana); code != 200 {
		t.Fatalf("the operator's decision: %d %s", code, body)
	}
	if actor, body, _ := e.decision(t, id); actor != e.idp.Issuer+"#u-ana" || body["operator_name"] != "Ana Operator" {
		t.Errorf("decision entry: %s %v", actor, body)
	}
	// Signing out ends the session on the server: its cookie, kept,
	// opens nothing.
	u, _ := url.Parse(e.base)
	kept := ana.jar.Cookies(u)
	req, _ := http.NewRequest(http.MethodPost, e.base+"/logout", nil)
	res, err := ana.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ana.jar.SetCookies(u, kept)
	if code, _ := ana.consoleStatus(t, e); code != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", code)
	}
}
