package sim_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/mesh/sim"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/web"
)

// TestMeshPageAccessibility checks the wildfire mesh page, mounted in the
// console over a running simulated mesh with aggregations waiting, with
// axe-core, and that it leads back to the console.
func TestMeshPageAccessibility(t *testing.T) {
	axe := browsertest.Axe(t)
	const operatorToken = "operator-token-0123456789"
	quiet := slog.New(slog.DiscardHandler)
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}, Extra: map[string][]byte{name: raw}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	db, err := sqlite.Open(t.Context(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatalf("approval service: %v", err)
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db, Logger: quiet}, example.EnvelopeID, example.Tools(db, nil))
	if err != nil {
		t.Fatalf("gateway: %v", err)
	}
	sys := mesh.New(mesh.Deps{Validator: reg, Ledger: db, Approvals: approvals, Sim: sim.Simulator{}, Speedup: 3000, Logger: quiet,
		OperatorOf: func(r *http.Request) string {
			p, _ := web.PrincipalFrom(r.Context())
			return p.ID
		}})
	tokens, err := web.ParseTokens("", "op-1:"+operatorToken, "")
	if err != nil {
		t.Fatalf("tokens: %v", err)
	}
	srv, err := web.New(web.Config{Gateway: gw, Approvals: approvals, Ledger: db, Verify: db.Verify, Checkpoint: db.LatestCheckpoint,
		Tokens: tokens, Sessions: db, Logger: quiet,
		Apps: []web.App{{Name: "mesh", Title: "Wildfire mesh", Handler: sys.Handler()}}})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	bctx := browsertest.Start(t, 2*time.Minute)
	for _, w := range []int64{375, 1280} {
		err := chromedp.Do(bctx,
			chromedp.EmulateViewport(w, 900),
			browsertest.SignIn(hs.URL, operatorToken),
			chromedp.Click(chromedp.CSS(`[data-testid=nav-app-mesh]`)),
			chromedp.WaitVisible(chromedp.CSS(`#cases form select`)),
			chromedp.WaitVisible(chromedp.CSS(`#map circle`)),
		)
		if err != nil {
			t.Fatalf("open the mesh page at %d px: %v", w, err)
		}
		browsertest.CheckAxe(t, bctx, axe, fmt.Sprintf("mesh page at %d px", w))
	}
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`header a[href="/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=nav-inbox]`)),
	)
	if err != nil {
		t.Errorf("back to the console: %v", err)
	}
}
