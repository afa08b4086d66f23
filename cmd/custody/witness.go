package main

import (
	"context"
	"fmt"
	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"log/slog"
	"strings"
	"time"

	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// witnessEvery is how often serve submits new checkpoints to witnesses.
const witnessEvery = 2 * time.Second

// witnessConfig is one witness: where it listens (the prefix its
// add-checkpoint endpoint is under) and its verifier key.
type witnessConfig = config.Witness

// parseWitness reads "URL=KEY", the form of --witness and of each item of
// $CUSTODY_WITNESSES.
func parseWitness(s string) (witnessConfig, error) {
	u, k, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) || k == "" {
		return witnessConfig{}, fmt.Errorf("witness %q: want URL=KEY, an http(s) URL and the witness's verifier key", s)
	}
	return witnessConfig{URL: u, Key: k}, nil
}

// witnesses returns the witnesses to submit checkpoints to.
func witnesses(list []witnessConfig) ([]tlog.Witness, error) {
	var ws []tlog.Witness
	for i, c := range list {
		v, err := tlog.NewWitnessVerifier(c.Key)
		if err != nil {
			return nil, fmt.Errorf("witnesses[%d]: %w", i, err)
		}
		ws = append(ws, tlog.Witness{URL: c.URL, Verifier: v})
	}
	return ws, nil
}

// witnessing submits the store's checkpoints to witnesses while serve
// runs; a nil *witnessing has none.
type witnessing struct {
	db  *sqlite.DB
	sub *tlog.Submitter
}

func newWitnessing(db *sqlite.DB, list []witnessConfig, logger *slog.Logger) (*witnessing, error) {
	ws, err := witnesses(list)
	if err != nil || len(ws) == 0 {
		return nil, err
	}
	return &witnessing{db: db, sub: tlog.NewSubmitter(db, ws, nil, logger)}, nil
}

// runner submits until ctx ends.
func (w *witnessing) runner(ctx context.Context, _ *stack) error {
	w.sub.Run(ctx, witnessEvery)
	return nil
}

// final seals a checkpoint of what the server appended and has the
// witnesses cosign it, so that a clean stop leaves every checkpoint
// witnessed. It runs once the server no longer appends.
func (w *witnessing) final() {
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.db.Checkpoint(ctx); err != nil {
		return // an empty ledger: nothing to cosign
	}
	w.sub.Round(ctx)
}

// status is web.Config.Witnesses; nil without witnesses.
func (w *witnessing) status() func() []tlog.WitnessStatus {
	if w == nil {
		return nil
	}
	return w.sub.Status
}

// inclusion is mcpserver.Options.Inclusion: the proof of entry seq in the
// latest checkpoint.
func (st *stack) inclusion(ctx context.Context, seq uint64) (tlog.Receipt, error) {
	sq, ok := st.db.(*sqlite.DB)
	if !ok {
		return tlog.Receipt{}, custody.Errorf(custody.EUNAVAILABLE, "inclusion proofs are kept by the SQLite store")
	}
	return sq.Receipt(ctx, seq, 0)
}
