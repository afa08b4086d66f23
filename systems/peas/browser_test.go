package peas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/web"
)

// Console principals and the sign message the operator edits in.
const (
	operatorID    = "op-1"
	operatorToken = "operator-token-0123456789"
	editedMessage = "WHITEOUT AT MM 88. PILE-UP AHEAD, SLOW TO 25 NOW"
)

// TestBrowserOperatorPath walks the operator path in a real browser: the
// whiteout chain waits for its approval, the operator finds the brief in
// the console inbox, edits the sign message and approves; once the chain
// goes on, the pile-up page shows the edited message on the sign, and the
// ledger holds the decision and the posted update with the edited text.
func TestBrowserOperatorPath(t *testing.T) {
	c := newConsole(t)
	ctx := browser(t)
	ch := c.pending(t)
	b := c.brief(t, ch.LocationID)
	card := `[data-testid=approval][data-id="` + ch.ApprovalID + `"]`

	do(t, ctx, "open the inbox",
		browsertest.SignIn(c.url, operatorToken),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	if got := text(t, ctx, card+` [data-testid=reason]`); got != b.RecommendedAction {
		t.Errorf("inbox reason %q, want the brief's recommended action %q", got, b.RecommendedAction)
	}
	if got := text(t, ctx, card+` [data-testid=context]`); !strings.Contains(got, "Galesburg") || !strings.Contains(got, b.BriefID) {
		t.Errorf("inbox context %q, want the brief %s citing Galesburg", got, b.BriefID)
	}
	if got := value(t, ctx, card+` [data-testid=edit-message]`); got != b.Message {
		t.Errorf("editable message %q, want the proposed %q", got, b.Message)
	}

	decided := `[data-testid=decided][data-id="` + ch.ApprovalID + `"]`
	do(t, ctx, "edit and approve",
		chromedp.SetValue(chromedp.CSS(card+` [data-testid=edit-message]`), editedMessage),
		chromedp.Click(chromedp.CSS(card+` [data-testid=approve]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
		chromedp.WaitVisible(chromedp.CSS(decided)),
	)
	if got := text(t, ctx, decided+` [data-testid=decided-status]`); !strings.EqualFold(got, string(custody.ApprovalApproved)) {
		t.Errorf("decided status %q, want %s", got, custody.ApprovalApproved)
	}

	if err := c.sys.Continue(t.Context(), c.gw, ch); err != nil {
		t.Fatalf("continue the chain: %v", err)
	}
	if ch.Stage != peas.StageNotified {
		t.Fatalf("chain stage %q after the approval (final %q), want %s", ch.Stage, ch.Final, peas.StageNotified)
	}

	signSel := `[data-testid=sign][data-sign="` + sign + `"]`
	corridor := `[data-testid=corridor][data-location="` + ch.LocationID + `"]`
	do(t, ctx, "open the pile-up page",
		chromedp.Click(chromedp.CSS(`[data-testid=nav-app-peas]`)),
		chromedp.WaitVisible(chromedp.CSS(signSel+`[data-state=posted] [data-testid=sign-message]`)),
	)
	if got := text(t, ctx, signSel+` [data-testid=sign-message]`); got != editedMessage {
		t.Errorf("sign %s shows %q, want the edited %q", sign, got, editedMessage)
	}
	if got := text(t, ctx, corridor+` [data-testid=stage]`); got != peas.StageNotified {
		t.Errorf("corridor stage %q, want %s", got, peas.StageNotified)
	}
	if got := text(t, ctx, corridor+` [data-testid=recommended-action]`); got != b.RecommendedAction {
		t.Errorf("corridor recommended action %q, want %q", got, b.RecommendedAction)
	}
	if n := count(t, ctx, `[data-testid=notification]`); n != len(ch.NotificationIDs) || n == 0 {
		t.Errorf("%d in-car warnings shown, want %d", n, len(ch.NotificationIDs))
	}
	screenshot(t, ctx, "/tmp/peas-after.png")

	c.decisionOnLedger(t, ch)
	c.postedOnLedger(t, ch)
}

// TestBrowserAccessibility checks the pile-up page, with a chain waiting
// for its approval, with axe-core.
func TestBrowserAccessibility(t *testing.T) {
	axe := browsertest.Axe(t)
	c := newConsole(t)
	ctx := browser(t)
	ch := c.pending(t)
	corridor := `[data-testid=corridor][data-location="` + ch.LocationID + `"]`
	for _, w := range []int64{375, 1280} {
		do(t, ctx, "open the pile-up page",
			chromedp.EmulateViewport(w, 900),
			browsertest.SignIn(c.url, operatorToken),
			chromedp.Click(chromedp.CSS(`[data-testid=nav-app-peas]`)),
			chromedp.WaitVisible(chromedp.CSS(corridor+` [data-testid=brief]`)),
		)
		browsertest.CheckAxe(t, ctx, axe, fmt.Sprintf("pile-up page at %d px", w))
	}
}

// TestBrowserUrgentVoice: choosing the urgent in-car voice asks for no
// name; the choice is the signed-in operator's.
func TestBrowserUrgentVoice(t *testing.T) {
	c := newConsole(t)
	ctx := browser(t)
	ch := c.pending(t)
	button := `[data-testid=urgent-voice][data-voice="` + ch.ApprovalID + `"]`
	do(t, ctx, "choose the urgent voice",
		browsertest.SignIn(c.url, operatorToken),
		chromedp.Navigate(c.url+"/apps/peas/"),
		chromedp.WaitVisible(chromedp.CSS(button)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+button+`').click()`),
	)
	for deadline := time.Now().Add(10 * time.Second); c.sys.VoiceChoice(t.Context(), ch.ApprovalID) != peas.VoiceUrgent; {
		if time.Now().After(deadline) {
			t.Fatalf("the urgent voice was not chosen")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// console is the core console over a stack: the operator inbox with the
// pile-up page mounted at /apps/peas/, served on a loopback port.
type console struct {
	*stack
	url string
}

// newConsole starts the console over a fresh stack.
func newConsole(t *testing.T) *console {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	s := newStack(t, llm.Router{}, func(d *peas.Deps) { d.Logger, d.OperatorOf = quiet, operatorOf })
	tokens, err := web.ParseTokens("", operatorID+":"+operatorToken, "")
	if err != nil {
		t.Fatalf("tokens: %v", err)
	}
	srv, err := web.New(web.Config{
		Gateway: s.gw, Approvals: s.approvals, Ledger: s.db, Verify: s.db.Verify, Checkpoint: s.db.LatestCheckpoint,
		Tokens: tokens, Sessions: s.db, Now: s.clock.Now, Logger: quiet,
		Apps: []web.App{{Name: "peas", Title: "Pile-up alert", Handler: s.sys.Handler()}},
	})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &console{stack: s, url: hs.URL}
}

// operatorOf names the operator behind a request to the pile-up page.
func operatorOf(r *http.Request) string {
	if p, ok := web.PrincipalFrom(r.Context()); ok && p.Role == web.RoleOperator {
		return p.ID
	}
	return ""
}

// brief returns the brief the corridor's chain composed.
func (c *console) brief(t *testing.T, locationID string) peas.Brief {
	t.Helper()
	cs, err := c.sys.Corridors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range cs {
		if st.LocationID == locationID && st.Brief != nil {
			return *st.Brief
		}
	}
	t.Fatalf("corridor %s has no brief", locationID)
	return peas.Brief{}
}

// entry returns the one ledger entry of the chain's trace of kind with
// refs, recorded for tool.
func (c *console) entry(t *testing.T, ch *peas.Chain, kind, tool string, refs map[string]string) custody.Entry {
	t.Helper()
	es, err := c.db.Entries(context.Background(), custody.Query{Trace: ch.Trace, Kind: kind, Refs: refs})
	if err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	var found []custody.Entry
	for _, e := range es {
		var b struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal(e.Body, &b) == nil && b.Tool == tool {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s entries of %s with refs %v in trace %s, want 1", len(found), kind, tool, refs, ch.Trace)
	}
	return found[0]
}

// decisionOnLedger checks that approval.decided records the operator's
// approval of the edited sign update in the operator's name.
func (c *console) decisionOnLedger(t *testing.T, ch *peas.Chain) {
	t.Helper()
	e := c.entry(t, ch, custody.KindApprovalDecided, peas.ToolVMS, map[string]string{approval.RefApproval: ch.ApprovalID})
	var body struct {
		Decision  string         `json:"decision"`
		Operator  string         `json:"operator_id"`
		Arguments peas.VMSAction `json:"arguments"`
		Edited    bool           `json:"edited"`
	}
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("approval.decided body %s: %v", e.Body, err)
	}
	if body.Decision != approval.Approve || body.Operator != operatorID || e.Actor != operatorID || !body.Edited {
		t.Errorf("approval.decided by %q: %s", e.Actor, e.Body)
	}
	if a := body.Arguments; a.Message != editedMessage || a.BillboardID != sign || a.DurationS <= 0 {
		t.Errorf("approval.decided arguments %+v, want sign %s with %q", a, sign, editedMessage)
	}
}

// postedOnLedger checks that issue_vms_update's call.succeeded posted the
// edited text under the approval.
func (c *console) postedOnLedger(t *testing.T, ch *peas.Chain) {
	t.Helper()
	e := c.entry(t, ch, custody.KindCallSucceeded, peas.ToolVMS, map[string]string{"vms_update_id": ch.VMSUpdateID})
	var body struct {
		Tool      string         `json:"tool"`
		Arguments peas.VMSInput  `json:"arguments"`
		Output    peas.VMSOutput `json:"output"`
	}
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("call.succeeded body %s: %v", e.Body, err)
	}
	if body.Tool != peas.ToolVMS || body.Arguments.ApprovalRequestID != ch.ApprovalID || body.Arguments.BillboardID != sign {
		t.Errorf("call.succeeded of the sign update: %s", e.Body)
	}
	if body.Arguments.Message != editedMessage || body.Output.MessageShown != editedMessage {
		t.Errorf("posted message %q, shown %q, want %q", body.Arguments.Message, body.Output.MessageShown, editedMessage)
	}
	if _, err := c.db.Verify(context.Background()); err != nil {
		t.Errorf("ledger does not verify: %v", err)
	}
}

// browser starts a headless Chromium, or skips the test without one.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, 45*time.Second)
}

// do runs the steps of what, failing the test if one fails.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the visible text of the first element matching sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// value returns the value of the form field matching sel.
func value(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("value of %s: %v", sel, err)
	}
	return s
}

// count returns how many elements match sel.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+quoteJS(sel)+`).length`))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func quoteJS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the whole page as a PNG, for a person to look at.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("save screenshot: %v", err)
	}
}
