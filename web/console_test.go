package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/web"
)

// browser starts a headless Chromium, or skips the test without one.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, 2*time.Minute)
}

// css selects the first element matching a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// text returns the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// TestConsole drives the operator console in a real browser: an operator
// edits and approves one announcement and declines another with a note,
// then finds the decisions on the verified ledger.
func TestConsole(t *testing.T) {
	e := newEnv(t)
	ctx := browser(t)
	const (
		original = `{"channel":"general","message":"SERVER MAINTENANCE TONIGHT"}`
		edited   = `{"channel":"general","message":"SERVER MAINTENANCE AT NINE"}`
		drill    = `{"channel":"ops","message":"FIRE DRILL AT TEN"}`
	)
	approveID := e.pending("t-console-1", original, custody.EPENDING)
	declineID := e.pending("t-console-2", drill, custody.EPENDING)
	card := func(id string) string { return `[data-testid=approval][data-id="` + id + `"]` }

	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(e.srv.URL+"/login?code="+loginLink(t, e, operatorToken)),
		chromedp.Click(css(`[data-testid=login-confirm]`)),
		chromedp.WaitVisible(css(card(approveID))),
		chromedp.WaitVisible(css(card(declineID))),
	)
	if err != nil {
		t.Fatalf("open inbox: %v", err)
	}
	countdown := text(t, ctx, card(approveID)+` [data-testid=countdown]`)
	reason := text(t, ctx, card(approveID)+` [data-testid=reason]`)
	if !strings.HasSuffix(countdown, "left") || reason == "" {
		t.Errorf("countdown %q, reason %q", countdown, reason)
	}
	screenshot(t, ctx, "/tmp/custody-inbox.png")

	err = step(ctx,
		chromedp.SetValue(css(card(approveID)+` [data-testid=edit-message]`), "SERVER MAINTENANCE AT NINE"),
		chromedp.SetValue(css(card(approveID)+` [data-testid=note]`), "moved to nine"),
		chromedp.Click(css(card(approveID)+` [data-testid=approve]`)),
		chromedp.WaitNotPresent(css(card(approveID))),
		chromedp.SetValue(css(card(declineID)+` [data-testid=note]`), "not during the audit"),
		chromedp.Click(css(card(declineID)+` [data-testid=decline]`)),
		chromedp.WaitNotPresent(css(card(declineID))),
		chromedp.WaitVisible(css(`[data-testid=inbox-empty]`)),
	)
	if err != nil {
		t.Fatalf("decide: %v; the page: %s", err, pageState(ctx))
	}
	a := e.approval(approveID)
	if a.Status != custody.ApprovalApproved || a.Operator != "op-1" || a.Note != "moved to nine" || !strings.Contains(string(a.Arguments), "AT NINE") {
		t.Errorf("approved %+v, arguments %s", a, a.Arguments)
	}
	if d := e.approval(declineID); d.Status != custody.ApprovalDeclined || d.Note != "not during the audit" {
		t.Errorf("declined %+v", d)
	}

	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Click(css(`[data-testid=nav-ledger]`)),
		chromedp.WaitVisible(css(`tr[data-kind="approval.decided"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=verify-status]").textContent.startsWith("Verified: 6 entries")`),
		chromedp.Click(css(`tr[data-kind="approval.decided"] button`)),
		chromedp.WaitVisible(css(`[data-testid=entry-detail]`)),
	)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	status := text(t, ctx, `[data-testid=verify-status]`)
	body := text(t, ctx, `[data-testid=entry-body]`)
	if !strings.HasPrefix(status, "Verified: 6 entries, head ") {
		t.Errorf("verification status %q", status)
	}
	if !strings.Contains(body, "SERVER MAINTENANCE AT NINE") || !strings.Contains(body, `"edited": true`) {
		t.Errorf("decided entry body %s", body)
	}
	screenshot(t, ctx, "/tmp/custody-ledger.png")

	if res := e.call("t-console-1", "post_announcement", edited); res.Status != 200 {
		t.Errorf("the approved, edited call: %d %s", res.Status, res.Body)
	}
	if res := e.call("t-console-1", "post_announcement", original); res.Status != 403 {
		t.Errorf("the original call after an edit: %d %s", res.Status, res.Body)
	}
	if res := e.call("t-console-2", "post_announcement", drill); res.Status != 403 {
		t.Errorf("the declined call: %d %s", res.Status, res.Body)
	}
}

// step runs actions with a minute of the browser's time, so that a step
// that never finishes leaves time to say what the page shows.
func step(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// pageState describes what the console shows: its error line and the
// pending cards, for the message of a step that failed.
func pageState(ctx context.Context) string {
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		error: document.querySelector("#error") && document.querySelector("#error").textContent,
		cards: [...document.querySelectorAll("[data-testid=approval]")].map((c) => c.dataset.id + ": " + c.innerText.slice(0, 200)),
		empty: document.querySelector("[data-testid=inbox-empty]") && !document.querySelector("[data-testid=inbox-empty]").hidden,
	})`))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return state
}

// approval reads an approval through the API as the auditor.
func (e *env) approval(id string) custody.Approval {
	e.t.Helper()
	res := e.do("GET", "/v1/approvals/"+id, auditorToken, nil)
	var a custody.Approval
	if err := json.Unmarshal(res.Body, &a); err != nil {
		e.t.Fatalf("approval %s: %d %s", id, res.Status, res.Body)
	}
	return a
}

// screenshot saves the page, for a person to look at.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	// A full-page capture of a scrolled page draws the sticky header
	// mid-page: capture from the top.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo({top: 0, behavior: "instant"})`)); err != nil {
		t.Errorf("scroll: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("save screenshot: %v", err)
	}
}

// choiceApproval asks for an announcement whose channel, an enum of the
// tool's input contract, and message the operator may edit.
func (e *env) choiceApproval(trace string) string {
	e.t.Helper()
	a, err := e.approvals.Request(e.t.Context(), approval.Request{
		Tool: "post_announcement", Args: json.RawMessage(`{"channel":"general","message":"PATCHING AT NOON"}`),
		Trace: trace, Requester: "agent-1", Editable: []string{"channel", "message"},
	})
	if err != nil {
		e.t.Fatalf("request approval: %v", err)
	}
	return a.ID
}

// TestApprovalForm: the edit form of an approval offers the values the
// tool's contract fixes, and only to operators and auditors.
func TestApprovalForm(t *testing.T) {
	e := newEnv(t)
	id := e.choiceApproval("t-form")
	res := e.do("GET", "/v1/approvals/"+id+"/form", auditorToken, nil)
	want := `{"approval_request_id":"` + id + `","fields":[{"name":"channel","value":"general","enum":["general","ops","alerts"]},{"name":"message","value":"PATCHING AT NOON"}],` +
		`"grant":{"allowed":true,"arguments":{"additionalProperties":false,"properties":{"channel":{"const":"general"},"message":{"const":"PATCHING AT NOON"}},"required":["channel","message"],"type":"object"}}}`
	if res.Status != 200 || strings.TrimSpace(string(res.Body)) != want {
		t.Errorf("form: %d %s\nwant %s", res.Status, res.Body, want)
	}
	if res := e.do("GET", "/v1/approvals/"+id+"/form", agentToken, nil); res.Status != 403 {
		t.Errorf("an agent read the form: %d", res.Status)
	}
	if res := e.do("GET", "/v1/approvals/no-such-id/form", operatorToken, nil); res.Status != 404 {
		t.Errorf("unknown approval: %d %s", res.Status, res.Body)
	}
}

// TestConsoleChoiceAndViolations: an argument with a fixed set of values
// is a select, and the violations of a refused edit show beside their
// field. The refusal comes from a stand-in for the gateway's check of an
// edited action, in the error shape the API gives it.
func TestConsoleChoiceAndViolations(t *testing.T) {
	e := newEnv(t)
	ctx := browser(t)
	id := e.choiceApproval("t-choice")
	card := `[data-testid=approval][data-id="` + id + `"]`
	err := chromedp.Do(ctx,
		browsertest.SignIn(e.srv.URL, operatorToken),
		chromedp.WaitVisible(css(card+` select[data-testid=edit-channel]`)),
	)
	if err != nil {
		t.Fatalf("open inbox: %v", err)
	}
	options, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+card+` [data-testid=edit-channel] option')].map(o => o.textContent)`))
	if err != nil || strings.Join(options, ",") != "general,ops,alerts" {
		t.Errorf("channel choices %v, %v", options, err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(card+` [data-testid=edit-channel]`), `"ops"`),
		chromedp.SetValue(css(card+` [data-testid=edit-message]`), "patching at noon"),
		chromedp.Click(css(card+` [data-testid=approve]`)),
		chromedp.WaitVisible(css(card+` [data-testid=violation-message]`)),
	)
	if err != nil {
		t.Fatalf("refused edit: %v", err)
	}
	// The server refuses the lowercase message against the tool's input
	// contract; the console shows why beside the field.
	if got := text(t, ctx, card+` [data-field=message] [data-testid=violation-message]`); got == "" {
		t.Errorf("no violation beside the message")
	}
	invalid, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` [data-testid=edit-message]').getAttribute("aria-invalid")`))
	if invalid != "true" {
		t.Errorf("the refused field is not marked invalid: %q", invalid)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(card+` [data-testid=edit-message]`), "PATCHING AT ONE"),
		chromedp.Click(css(card+` [data-testid=approve]`)),
		chromedp.WaitNotPresent(css(card)),
	)
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	a := e.approval(id)
	if a.Status != custody.ApprovalApproved || string(a.Arguments) != `{"channel":"ops","message":"PATCHING AT ONE"}` || a.Operator != "op-1" {
		t.Errorf("approved %s by %q: %s", a.Status, a.Operator, a.Arguments)
	}
}

// TestConsoleOneRowNav: on a phone 375 px wide, the navigation with three
// apps fits one row.
func TestConsoleOneRowNav(t *testing.T) {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	e := newEnv(t, web.App{Name: "peas", Title: "Pile-up alert", Handler: app},
		web.App{Name: "mesh", Title: "Wildfire mesh", Handler: app}, web.App{Name: "brain", Title: "Brain room", Handler: app})
	ctx := browser(t)
	e.pending("t-nav", `{"channel":"general","message":"NAV CHECK"}`, custody.EPENDING)
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		browsertest.SignIn(e.srv.URL, operatorToken),
		chromedp.WaitVisible(css(`[data-testid=nav-app-brain]`)),
		chromedp.WaitVisible(css(`[data-testid=pending-count]`)),
	)
	if err != nil {
		t.Fatalf("open console: %v", err)
	}
	const measure = `(() => {
		const nav = document.querySelector("[data-testid=nav]");
		const tops = [...nav.querySelectorAll("a")].map(a => Math.round(a.getBoundingClientRect().top));
		return {rows: new Set(tops).size, links: tops.length, overflow: nav.scrollWidth - nav.clientWidth};
	})()`
	type layout struct{ Rows, Links, Overflow int }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[layout](measure))
	if err != nil {
		t.Fatal(err)
	}
	if got.Links != 5 || got.Rows != 1 || got.Overflow > 0 {
		t.Errorf("navigation on a phone: %+v, want 5 links in one row with nothing hidden", got)
	}
	screenshot(t, ctx, "/tmp/custody-nav-375.png")
}

// TestConsoleAccessibility checks every console page with axe-core: the
// sign-in page, the inbox with a pending edit form, one approval, the
// ledger with an entry open.
func TestConsoleAccessibility(t *testing.T) {
	axe := browsertest.Axe(t)
	e := newEnv(t)
	ctx := browser(t)
	choice := e.choiceApproval("t-a11y-1")
	e.pending("t-a11y-2", `{"channel":"general","message":"A11Y CHECK"}`, custody.EPENDING)
	for _, viewport := range []struct {
		name, scheme string
		w, h         int64
	}{{"phone", "light", 375, 812}, {"desktop", "light", 1280, 900}, {"phone-dark", "dark", 375, 812}} {
		t.Run(viewport.name, func(t *testing.T) {
			err := chromedp.Do(ctx,
				browsertest.ColorScheme(viewport.scheme),
				chromedp.EmulateViewport(viewport.w, viewport.h),
				chromedp.Navigate(e.srv.URL+"/login?code="+loginLink(t, e, operatorToken)),
				chromedp.WaitVisible(css(`[data-testid=login-confirm]`)),
			)
			if err != nil {
				t.Fatalf("sign-in page: %v", err)
			}
			browsertest.CheckAxe(t, ctx, axe, "sign-in link page")
			screenshot(t, ctx, "/tmp/custody-login-"+viewport.name+".png")
			err = chromedp.Do(ctx,
				chromedp.Click(css(`[data-testid=login-confirm]`)),
				chromedp.WaitVisible(css(`[data-testid=approval][data-id="`+choice+`"] select`)),
			)
			if err != nil {
				t.Fatalf("inbox: %v", err)
			}
			browsertest.CheckAxe(t, ctx, axe, "inbox")
			err = chromedp.Do(ctx,
				chromedp.Navigate(e.srv.URL+"/#/approvals/"+choice),
				chromedp.WaitVisible(css(`#approval-view [data-testid=approval] [data-testid=approve]`)),
			)
			if err != nil {
				t.Fatalf("approval: %v", err)
			}
			browsertest.CheckAxe(t, ctx, axe, "approval detail")
			err = chromedp.Do(ctx,
				chromedp.Navigate(e.srv.URL+"/#/ledger"),
				chromedp.WaitVisible(css(`tr[data-kind="approval.requested"]`)),
				chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=verify-status]").dataset.ok === "true"`),
				chromedp.Click(css(`tr[data-kind="approval.requested"] button`)),
				chromedp.WaitVisible(css(`[data-testid=entry-detail]`)),
			)
			if err != nil {
				t.Fatalf("ledger: %v", err)
			}
			browsertest.CheckAxe(t, ctx, axe, "ledger")
			err = chromedp.Do(ctx,
				chromedp.Click(css(`#logout button`)),
				chromedp.WaitVisible(css(`[data-testid=login-token]`)),
			)
			if err != nil {
				t.Fatalf("sign out: %v", err)
			}
			browsertest.CheckAxe(t, ctx, axe, "sign-in page")
		})
	}
}

// TestConsoleApprovalPage: the link a notification carries
// (#/approvals/ID) opens that approval; deciding it there shows the
// outcome in the signed-in operator's name.
func TestConsoleApprovalPage(t *testing.T) {
	e := newEnv(t)
	ctx := browser(t)
	id := e.pending("t-page", `{"channel":"ops","message":"ROTATE KEYS"}`, custody.EPENDING)
	view := `#approval-view `
	err := chromedp.Do(ctx,
		browsertest.SignIn(e.srv.URL, operatorToken),
		chromedp.Navigate(e.srv.URL+"/#/approvals/"+url.PathEscape(id)),
		chromedp.WaitVisible(css(view+`[data-testid=approval][data-id="`+id+`"] [data-testid=approve]`)),
		chromedp.SetValue(css(view+`[data-testid=note]`), "rotating now"),
		chromedp.Click(css(view+`[data-testid=approve]`)),
		chromedp.WaitVisible(css(view+`[data-testid=approval-outcome]`)),
	)
	if err != nil {
		t.Fatalf("decide on the approval's page: %v", err)
	}
	if got := text(t, ctx, view+`[data-testid=approval-outcome]`); !strings.Contains(got, "approved") || !strings.Contains(got, "op-1") || !strings.Contains(got, "rotating now") {
		t.Errorf("outcome %q", got)
	}
	if a := e.approval(id); a.Status != custody.ApprovalApproved || a.Operator != "op-1" {
		t.Errorf("approval %+v", a)
	}
}

// TestConsoleUpstreamsDown: the console says which upstream servers are
// down and why, as /healthz does, and says nothing while all are up.
func TestConsoleUpstreamsDown(t *testing.T) {
	var mu sync.Mutex
	down := []web.UpstreamHealth{{Name: "files", Error: "oauth: invalid_client: check oauth.clientId and oauth.clientSecret"}}
	e := newEnvWith(t, func(c *web.Config) {
		c.Upstreams = func() []web.UpstreamHealth {
			mu.Lock()
			defer mu.Unlock()
			return down
		}
	})
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/login?code="+loginLink(t, e, operatorToken)),
		chromedp.Click(css(`[data-testid=login-confirm]`)),
		chromedp.WaitVisible(css(`[data-testid=upstreams-down]`)),
	)
	if err != nil {
		t.Fatalf("console: %v", err)
	}
	if banner := text(t, ctx, `[data-testid=upstreams-down]`); !strings.Contains(banner, "Upstream files is down") || !strings.Contains(banner, "invalid_client") {
		t.Errorf("banner %q", banner)
	}
	mu.Lock()
	down = nil
	mu.Unlock()
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(css(`#logout`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=upstreams-down]").hidden === true`)); err != nil {
		t.Fatalf("all up: %v", err)
	}
}

// TestConsoleAuditorReads: an auditor sees what waits, and no way to
// decide it.
func TestConsoleAuditorReads(t *testing.T) {
	e := newEnv(t)
	ctx := browser(t)
	id := e.pending("t-auditor", `{"channel":"ops","message":"HI"}`, custody.EPENDING)
	card := `[data-testid=approval][data-id="` + id + `"]`
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/login?code="+loginLink(t, e, auditorToken)),
		chromedp.Click(css(`[data-testid=login-confirm]`)),
		chromedp.WaitVisible(css(card+` [data-testid=auditor-note]`)),
	)
	if err != nil {
		t.Fatalf("console: %v", err)
	}
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('`+card+` [data-testid=approve]').offsetParent`))
	if err != nil {
		t.Fatal(err)
	}
	if visible {
		t.Error("an auditor is shown the approve button")
	}
	if who := text(t, ctx, `#principal`); !strings.Contains(who, "aud-1 · auditor") {
		t.Errorf("header %q", who)
	}
}
