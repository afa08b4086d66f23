// Package browsertest starts the headless Chromium that the console's
// browser tests drive, or skips the test when the machine has none; it
// signs in to the console and checks pages with axe-core.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chrome returns the Chromium to drive: $CUSTODY_CHROME, /usr/bin/chromium
// or the first of chromium, chromium-browser and google-chrome on PATH;
// "" when there is none.
func Chrome() string {
	if p := os.Getenv("CUSTODY_CHROME"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a headless Chromium with a fresh profile and no network
// beyond the machine, and returns a context that drives it until timeout.
// It skips t, saying why, when no Chromium is found.
func Start(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path := Chrome()
	if path == "" {
		t.Skip("no Chromium found (install chromium or set CUSTODY_CHROME to run the browser tests)")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first run starts the browser and binds its life to ctx, which
	// must have no deadline; later runs get one.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// SignIn signs in to the console served at base with token, through the
// sign-in page's token form, and waits for the console to show who is
// signed in.
func SignIn(base, token string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-token]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-token]`), token),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#logout`)),
	)
}

// Axe returns axe-core's script from $CUSTODY_TEST_AXE (the path of
// axe.min.js), or skips t, saying why, when it is not set.
func Axe(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CUSTODY_TEST_AXE")
	if path == "" {
		t.Skip("CUSTODY_TEST_AXE is not set (npm install axe-core and point it at axe.min.js to check accessibility)")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read axe-core: %v", err)
	}
	return string(src)
}

// violation is what the check reports of one axe-core violation.
type violation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// CheckAxe runs axe-core (the script Axe returned) on the page open in
// ctx and fails t for every violation it finds, naming page.
func CheckAxe(t *testing.T, ctx context.Context, axe, page string) {
	t.Helper()
	const run = `(async () => {
		const r = await axe.run(document, {resultTypes: ["violations"]});
		return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
			targets: v.nodes.map(n => n.target.join(" "))}));
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe+"\n;void 0")); err != nil {
		t.Fatalf("%s: inject axe-core: %v", page, err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]violation](run, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: run axe-core: %v", page, err)
	}
	for _, v := range found {
		t.Errorf("%s: accessibility violation %s (%s): %s at %v", page, v.ID, v.Impact, v.Help, v.Targets)
	}
}

// ColorScheme makes the pages prefer scheme: "light" or "dark".
func ColorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		params := map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}
		var res struct{}
		return chromedp.Void{}, t.Call(ctx, "Emulation.setEmulatedMedia", params, &res)
	}
}
