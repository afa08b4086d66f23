// Package browsertest starts the headless Chromium that the console's
// browser tests drive, or skips the test when the machine has none.
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
