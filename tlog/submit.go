package tlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// LogNote is one checkpoint of a log as the log signed it.
type LogNote struct {
	Size   uint64
	Signed []byte
}

// Log is what a Submitter needs of the ledger.
type Log interface {
	// NotesAfter returns the signed checkpoint notes of sizes past after,
	// in size order.
	NotesAfter(ctx context.Context, after uint64) ([]LogNote, error)
	// ConsistencyProof proves the tree of size from a prefix of the one
	// of size to.
	ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error)
	// AddCosignature stores a witness's cosignature line for the
	// checkpoint of size.
	AddCosignature(ctx context.Context, size uint64, witness, line string) error
	// LastCosigned returns the size of the latest checkpoint the witness
	// cosigned, 0 when none.
	LastCosigned(ctx context.Context, witness string) (uint64, error)
}

// WitnessStatus is what a Submitter knows of one witness.
type WitnessStatus struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Cosigned is the size of the latest checkpoint it cosigned.
	Cosigned uint64 `json:"cosigned"`
	// Refusals counts its refusals to cosign; Failures the submissions
	// that got no answer.
	Refusals int64 `json:"refusals"`
	Failures int64 `json:"failures"`
	// Refused is set while its last answer was a refusal: the log may
	// have been rewritten, or rolled back, since it last cosigned.
	Refused   bool   `json:"refused"`
	LastError string `json:"last_error,omitempty"`
}

// Submitter asks witnesses to cosign every checkpoint of a log, in order,
// each with a consistency proof from the last one the witness cosigned,
// and stores their cosignatures with the log. It is safe for concurrent
// use.
type Submitter struct {
	log       Log
	witnesses []Witness
	client    *http.Client
	logger    *slog.Logger

	// round serializes rounds; it guards known and loaded.
	round  sync.Mutex
	known  []uint64 // the size each witness cosigned last
	loaded []bool   // whether known was read from the log
	// mu guards status, so that Status never waits for a round.
	mu     sync.Mutex
	status []WitnessStatus // one per witness, in order
}

// NewSubmitter returns a submitter of log's checkpoints to witnesses. A
// nil client is one with a 10 s timeout; a nil logger discards.
func NewSubmitter(log Log, witnesses []Witness, client *http.Client, logger *slog.Logger) *Submitter {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Submitter{log: log, witnesses: witnesses, client: client, logger: logger,
		status: make([]WitnessStatus, len(witnesses)), known: make([]uint64, len(witnesses)), loaded: make([]bool, len(witnesses))}
	for i, w := range witnesses {
		s.status[i] = WitnessStatus{Name: w.Verifier.Name(), URL: w.URL}
	}
	return s
}

// Run submits every interval until ctx ends.
func (s *Submitter) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round submits to each witness the checkpoints it has not cosigned yet,
// and returns the first error met (every witness is tried).
func (s *Submitter) Round(ctx context.Context) error {
	s.round.Lock()
	defer s.round.Unlock()
	var first error
	for i := range s.witnesses {
		if err := s.submitAll(ctx, i); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Status returns what is known of each witness.
func (s *Submitter) Status() []WitnessStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WitnessStatus(nil), s.status...)
}

// update changes the status of witness i.
func (s *Submitter) update(i int, fn func(st *WitnessStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.status[i])
}

func (s *Submitter) submitAll(ctx context.Context, i int) error {
	w := s.witnesses[i]
	if !s.loaded[i] {
		n, err := s.log.LastCosigned(ctx, w.Verifier.Name())
		if err != nil {
			return err
		}
		s.known[i], s.loaded[i] = n, true
		s.update(i, func(st *WitnessStatus) { st.Cosigned = n })
	}
	notes, err := s.log.NotesAfter(ctx, s.known[i])
	if err != nil {
		return err
	}
	for _, n := range notes {
		if n.Size <= s.known[i] {
			continue // the witness answered a conflict with a later size
		}
		if err := s.submit(ctx, i, w, n); err != nil {
			s.update(i, func(st *WitnessStatus) { s.failed(st, err) })
			return err
		}
	}
	return nil
}

// submit has witness i cosign n; a conflict is retried once from the size
// the witness says it knows.
func (s *Submitter) submit(ctx context.Context, i int, w Witness, n LogNote) error {
	line, err := s.add(ctx, w, s.known[i], n)
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		if conflict.Known > n.Size {
			return &RefusedError{Status: http.StatusConflict, Message: fmt.Sprintf("the witness cosigned size %d of this log, past the checkpoint of size %d: the log was rolled back", conflict.Known, n.Size)}
		}
		s.known[i] = conflict.Known
		line, err = s.add(ctx, w, s.known[i], n)
	}
	if err != nil {
		return fmt.Errorf("witness %s, checkpoint %d: %w", w.Verifier.Name(), n.Size, err)
	}
	if err := s.log.AddCosignature(ctx, n.Size, w.Verifier.Name(), line.Line); err != nil {
		return err
	}
	s.known[i] = n.Size
	s.update(i, func(st *WitnessStatus) { st.Cosigned, st.Refused, st.LastError = n.Size, false, "" })
	return nil
}

func (s *Submitter) add(ctx context.Context, w Witness, old uint64, n LogNote) (SigLine, error) {
	var proof [][]byte
	if old > 0 {
		var err error
		if proof, err = s.log.ConsistencyProof(ctx, old, n.Size); err != nil {
			return SigLine{}, err
		}
	}
	return AddCheckpoint(ctx, s.client, w, old, proof, n.Signed)
}

// failed records a failed submission and logs it: a refusal as an error,
// for it means the log's history changed under the witness.
func (s *Submitter) failed(st *WitnessStatus, err error) {
	st.LastError = err.Error()
	if IsRefused(err) {
		st.Refusals++
		st.Refused = true
		s.logger.Error("a witness refused to cosign the ledger's checkpoint", "witness", st.Name, "url", st.URL, "err", err)
		return
	}
	st.Failures++
	s.logger.Warn("could not submit a checkpoint to a witness", "witness", st.Name, "url", st.URL, "err", err)
}
