package main

import (
	"context"
	"log/slog"

	"github.com/custody-dev/custody/llm"
	"github.com/custody-dev/custody/peas"
	"github.com/custody-dev/custody/web"
)

// serveSystems returns the seed systems served next to the core: their
// tools join the envelope, their pages the console, their feeds run
// beside the server.
func (m *Main) serveSystems(_ context.Context) (systems, error) {
	router, err := llm.NewRouter(m.env("CUSTODY_LLM", "template"), m.env("CUSTODY_LLM_EDGE", ""))
	if err != nil {
		return systems{}, err
	}
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pileup := peas.New(peas.Deps{LLM: router, Logger: logger})
	return systems{
		Tools: pileup.Tools(),
		Apps: func(st *stack) ([]web.App, error) {
			pileup.Attach(st.approvals, st.db, st.db, st.reg)
			return []web.App{{Name: "peas", Title: "Pile-up alert", Handler: pileup.Handler()}}, nil
		},
		Runners: []func(ctx context.Context, st *stack) error{
			func(ctx context.Context, st *stack) error { return pileup.Run(ctx, st.gw) },
		},
	}, nil
}
