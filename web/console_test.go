package web_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/browsertest"
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
		chromedp.Navigate(e.srv.URL+"/login?token="+operatorToken),
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

	err = chromedp.Do(ctx,
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
		t.Fatalf("decide: %v", err)
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
