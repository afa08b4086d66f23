package web_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/internal/browsertest"
)

// grantBody is a decision that approves the held call and grants two more
// announcements to #general, any message.
const grantBody = `{"decision":"approved","note":"the rollout","grant":{"arguments":{"type":"object","additionalProperties":false,"required":["channel","message"],"properties":{"channel":{"const":"general"},"message":{"type":"string"}}},"max_uses":2}}`

// TestGrantAPI: the form offers the grant prefilled from the held call;
// a decision with a grant makes it; a call within it runs without asking
// and names it; GET /v1/grants lists it; an operator revokes it, after
// which the next call is held again.
func TestGrantAPI(t *testing.T) {
	e := newEnv(t)
	id := e.pending("t-grant-1", `{"channel":"general","message":"DEPLOY AT NOON"}`, custody.EPENDING)

	res := e.do("GET", "/v1/approvals/"+id+"/form", operatorToken, nil)
	var form struct {
		Grant struct {
			Allowed   bool            `json:"allowed"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"grant"`
	}
	if err := json.Unmarshal(res.Body, &form); err != nil || res.Status != 200 {
		t.Fatalf("form: %d %s", res.Status, res.Body)
	}
	want, _ := approval.SuggestGrant(json.RawMessage(`{"channel":"general","message":"DEPLOY AT NOON"}`))
	if !form.Grant.Allowed || string(form.Grant.Arguments) != string(want) {
		t.Errorf("form grant: allowed %v, arguments %s; want %s", form.Grant.Allowed, form.Grant.Arguments, want)
	}

	res = e.decide(id, grantBody)
	var a custody.Approval
	if err := json.Unmarshal(res.Body, &a); err != nil || res.Status != 200 || a.Grant == "" {
		t.Fatalf("decision with a grant: %d %s", res.Status, res.Body)
	}
	conforms(t, "a decision with a grant", res.Body, "Approval")
	grant := a.Grant

	res = e.call("t-grant-2", "post_announcement", `{"channel":"general","message":"DEPLOY DONE"}`)
	if res.Status != 200 {
		t.Fatalf("a call within the grant: %d %s", res.Status, res.Body)
	}
	if es := e.entries("t-grant-2", custody.KindCallSucceeded); len(es) != 1 || es[0].Refs[custody.RefGrant] != grant {
		t.Errorf("the call's entry does not name grant %s: %+v", grant, es)
	}
	if res := e.call("t-grant-2", "post_announcement", `{"channel":"ops","message":"DEPLOY DONE"}`); res.Status != 202 {
		t.Errorf("a call outside the grant: %d %s", res.Status, res.Body)
	}

	res = e.do("GET", "/v1/grants", auditorToken, nil)
	var list struct {
		Grants []json.RawMessage `json:"grants"`
	}
	if err := json.Unmarshal(res.Body, &list); err != nil || res.Status != 200 || len(list.Grants) != 1 {
		t.Fatalf("GET /v1/grants: %d %s", res.Status, res.Body)
	}
	conforms(t, "a listed grant", list.Grants[0], "Grant")
	var g custody.Grant
	json.Unmarshal(list.Grants[0], &g)
	if g.ID != grant || g.Uses != 1 || g.Status != custody.GrantActive || g.Operator != "op-1" || g.Agent != "agent-1" {
		t.Errorf("listed grant %+v", g)
	}

	path := "/v1/grants/" + grant + "/revoke"
	if res := e.do("POST", path, agentToken, []byte(`{"reason":"x"}`)); res.Status != 403 {
		t.Errorf("an agent revoked: %d", res.Status)
	}
	if res := e.do("POST", path, operatorToken, []byte(`{}`)); res.Status != 400 {
		t.Errorf("a revocation without a reason: %d %s", res.Status, res.Body)
	}
	res = e.do("POST", path, operatorToken, []byte(`{"reason":"rollout finished"}`))
	if res.Status != 200 || !strings.Contains(string(res.Body), `"status":"revoked"`) {
		t.Fatalf("revoke: %d %s", res.Status, res.Body)
	}
	conforms(t, "a revoked grant", res.Body, "Grant")
	if res := e.call("t-grant-3", "post_announcement", `{"channel":"general","message":"ONE MORE"}`); res.Status != 202 {
		t.Errorf("a call after the revocation: %d %s", res.Status, res.Body)
	}
}

// TestDecisionRefusesBadGrant: a grant member that is malformed, or that
// comes with a decline, is refused and nothing is decided.
func TestDecisionRefusesBadGrant(t *testing.T) {
	e := newEnv(t)
	id := e.pending("t-bad-grant", `{"channel":"general","message":"BAD GRANT"}`, custody.EPENDING)
	for name, body := range map[string]string{
		"ErrUnknownMember": `{"decision":"approved","grant":{"arguments":{},"max_uses":1,"for_ever":true}}`,
		"ErrNoArguments":   `{"decision":"approved","grant":{"max_uses":1}}`,
		"ErrBadExpiry":     `{"decision":"approved","grant":{"arguments":{},"expires":"tomorrow"}}`,
		"ErrNoBound":       `{"decision":"approved","grant":{"arguments":{}}}`,
		"ErrNotSchema":     `{"decision":"approved","grant":{"arguments":{"type":7},"max_uses":1}}`,
		"ErrDeclined":      `{"decision":"declined","grant":{"arguments":{},"max_uses":1}}`,
	} {
		if res := e.decide(id, body); res.Status != 400 {
			t.Errorf("%s: %d %s", name, res.Status, res.Body)
		}
	}
	if a := e.approval(id); a.Status != custody.ApprovalPending {
		t.Errorf("the request is %s after refused grants", a.Status)
	}
}

// TestConsoleGrant drives the console in a real browser: the decision
// form offers "Approve once" and "Grant…", the grant's schema shown
// exactly as prefilled; the operator widens the message, grants two calls,
// finds the grant on the grants page and revokes it.
func TestConsoleGrant(t *testing.T) {
	e := newEnv(t)
	ctx := browser(t)
	args := `{"channel":"general","message":"DEPLOY AT NOON"}`
	id := e.pending("t-console-grant", args, custody.EPENDING)
	card := `[data-testid=approval][data-id="` + id + `"]`
	err := chromedp.Do(ctx,
		browsertest.SignIn(e.srv.URL, operatorToken),
		chromedp.WaitVisible(css(card+` [data-testid=grant-open]`)),
		chromedp.Click(css(card+` [data-testid=grant-open]`)),
		chromedp.WaitVisible(css(card+` [data-testid=grant-arguments]`)),
	)
	if err != nil {
		t.Fatalf("open the grant: %v; the page: %s", err, pageState(ctx))
	}
	if got := text(t, ctx, card+` [data-testid=approve]`); got != "Approve once" {
		t.Errorf("the approve button says %q", got)
	}
	prefill, _ := approval.SuggestGrant(json.RawMessage(args))
	var shown bytes.Buffer
	json.Indent(&shown, prefill, "", "  ")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+` [data-testid=grant-arguments]').value`))
	if err != nil || got != shown.String() {
		t.Errorf("the grant shows\n%s\nwant exactly the prefilled\n%s (%v)", got, shown.String(), err)
	}
	widened := `{"type":"object","required":["channel","message"],"properties":{"channel":{"const":"general"},"message":{"type":"string"}}}`
	err = step(ctx,
		chromedp.SetValue(css(card+` [data-testid=grant-arguments]`), widened),
		chromedp.SetValue(css(card+` [data-testid=grant-max-uses]`), "2"),
		chromedp.Click(css(card+` [data-testid=grant-submit]`)),
		chromedp.WaitNotPresent(css(card)),
	)
	if err != nil {
		t.Fatalf("grant: %v; the page: %s", err, pageState(ctx))
	}
	a := e.approval(id)
	if a.Status != custody.ApprovalApproved || a.Grant == "" {
		t.Fatalf("decided %+v", a)
	}
	if res := e.call("t-console-grant-2", "post_announcement", `{"channel":"general","message":"DEPLOY DONE"}`); res.Status != 200 {
		t.Errorf("a call within the grant: %d %s", res.Status, res.Body)
	}
	row := `[data-testid=grant][data-id="` + a.Grant + `"]`
	err = step(ctx,
		chromedp.Navigate(e.srv.URL+"/#/grants"),
		chromedp.WaitVisible(css(row+` [data-testid=revoke]`)),
		chromedp.SetValue(css(row+` [data-testid=revoke-reason]`), "rollout done"),
		chromedp.Click(css(row+` [data-testid=revoke]`)),
		chromedp.Poll[chromedp.Void](`(document.querySelector('`+row+` [data-testid=grant-status]') || {}).textContent === "revoked"`),
	)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	screenshot(t, ctx, "/tmp/custody-grants.png")
}
