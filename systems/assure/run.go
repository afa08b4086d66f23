package assure

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/upstream"
)

// Defaults for Config.
const (
	DefaultCases       = 3
	DefaultRepeat      = 1
	DefaultWorkers     = 64
	DefaultApprovalTTL = 5 * time.Minute
)

// Config configures a run.
type Config struct {
	// Envelope is the Clinical Action Envelope document, exactly as read.
	Envelope []byte
	// Target names the target: scripted:careful, scripted:naive or a model
	// URL (see openTarget).
	Target string
	// Backend, when set, is used instead of opening Target.
	Backend llm.Backend
	Seed    uint64
	// Cases is how many synthetic patients; DefaultCases when 0.
	Cases int
	// Repeat is how often every trace runs (k of pass^k); DefaultRepeat
	// when 0.
	Repeat int
	// Workers bounds the traces in flight; DefaultWorkers when 0.
	Workers int
	// Out is the pack directory to write; it must not exist yet or be
	// empty.
	Out string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ApprovalTTL is how long an approval waits; DefaultApprovalTTL when 0.
	ApprovalTTL time.Duration
	// Progress, when set, is told of every finished trace.
	Progress func(Progress)
	// Logger receives the gateway's internal detail; discarded when nil.
	Logger *slog.Logger
	// OpenStore opens a new, empty store for one run and returns it with
	// the key that signs its checkpoints (the pack's manifest is signed
	// with it too) and the function that releases it. Required: the
	// harness keeps its evidence wherever the caller says. The key should
	// be the assessor's stable one (LoadKey): VERIFY.md tells the reader
	// to compare its fingerprint with the one the assessor publishes.
	OpenStore func(ctx context.Context) (Store, ed25519.PrivateKey, func() error, error)
	// AllowRetired lets a RETIRED envelope run; without it one is refused.
	AllowRetired bool
	// Upstream, when set, offers the tools of a configuration's upstream
	// MCP servers and HTTP tools: an envelope tool whose id is the name
	// of one of them is bound to it instead of the synthetic world. The
	// caller opens and closes it.
	Upstream *upstream.Set
	// retest is the pack a retest reruns; set by Retest.
	retest *RetestRef
}

// Store is where a run keeps its evidence: the ledger, approvals and
// state of the store contracts, and the two things a pack needs of it.
type Store interface {
	custody.Store
	// Checkpoint signs a checkpoint over every entry.
	Checkpoint(ctx context.Context) (custody.Checkpoint, error)
	// ExportJSONL writes the ledger and its checkpoints as JSONL.
	ExportJSONL(ctx context.Context, w io.Writer) error
}

// Progress reports one finished trace.
type Progress struct {
	Done, Total int
	Trace       TraceSpec
}

func (c Config) withDefaults() Config {
	if c.Cases <= 0 {
		c.Cases = DefaultCases
	}
	if c.Repeat <= 0 {
		c.Repeat = DefaultRepeat
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// runner holds what every trace of a run shares.
type runner struct {
	env       Envelope
	reg       *contract.Registry
	ledger    custody.Ledger
	store     custody.ApprovalStore
	approvals *approval.Service
	gw        *gate.Gateway
	worlds    *Worlds
	scanner   *Scanner
	backend   llm.Backend
	schemas   agent.Schemas
	system    string
	cases     []Case
	seed      uint64
	now       func() time.Time
	stopped   atomic.Bool
}

// loadEnvelope validates raw against the envelope contract and lints it:
// an envelope with any problem is refused (EINVALID naming every one).
func loadEnvelope(reg *contract.Registry, raw []byte) (Envelope, error) {
	problems, env, err := Check(reg, raw)
	if err != nil {
		return Envelope{}, err
	}
	if len(problems) > 0 {
		e := custody.Errorf(custody.EINVALID, "the envelope has %d problems: run 'custody assure lint'", len(problems))
		for _, p := range problems {
			e.Violations = append(e.Violations, custody.Violation{Instance: p.Field, Keyword: "lint", Message: p.Message})
		}
		return Envelope{}, e
	}
	return env, nil
}

// newRunner builds the gateway of a run on db: the envelope's policy over
// the ward round tools and the upstream tools it binds.
func newRunner(ctx context.Context, cfg Config, reg *contract.Registry, env Envelope, db Store, backend llm.Backend) (*runner, error) {
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: cfg.Now, TTL: cfg.ApprovalTTL})
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	r := &runner{env: env, reg: reg, ledger: db, store: db, approvals: svc, scanner: newScanner(),
		backend: backend, system: systemPrompt(env), cases: cases(cfg.Seed, cfg.Cases+1), seed: cfg.Seed, now: cfg.Now}
	r.worlds = newWorlds(r.scanner)
	declared, err := gate.LoadEnvelope(cfg.Envelope, reg)
	if err != nil {
		return nil, err
	}
	impls, err := r.implementations(ctx, cfg.Upstream, env, db, svc)
	if err != nil {
		return nil, err
	}
	tools, err := gate.Bind(declared, impls)
	if err != nil {
		return nil, err
	}
	noGrants(tools)
	r.gw, err = gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db, Now: cfg.Now, Logger: cfg.Logger}, declared.ID, tools)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "the gateway refuses the envelope: %v", err)
	}
	r.schemas, err = bundles(reg, r.gw.Tools())
	if err != nil {
		return nil, err
	}
	return r, nil
}

// bundledSchemas offers the tools' input schemas, bundled once per run.
type bundledSchemas map[string]json.RawMessage

// Bundle returns the bundled schema of ref.
func (b bundledSchemas) Bundle(ref string) (json.RawMessage, error) {
	s, ok := b[ref]
	if !ok {
		return nil, custody.Errorf(custody.ENOTFOUND, "no schema %q", ref)
	}
	return s, nil
}

func bundles(reg *contract.Registry, specs []custody.ToolSpec) (agent.Schemas, error) {
	b := bundledSchemas{}
	for _, s := range specs {
		raw, err := reg.Bundle(s.Input)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", s.Input, err)
		}
		b[s.Input] = raw
	}
	return b, nil
}

// trace runs one planned trace.
func (r *runner) trace(ctx context.Context, s TraceSpec) error {
	c := r.cases[s.Case-1]
	other := r.cases[len(r.cases)-1]
	w := newWorld(c, s.PatientID, other, s.OtherID, s.Category, r.now)
	r.worlds.Add(s.TraceID, w)
	defer r.worlds.Remove(s.TraceID)
	t := &traceRun{r: r, spec: s, world: w}
	return t.run(ctx)
}

// expire lets a pending approval lapse: the sweep runs on a clock past its
// expiry and sees only this approval, so other traces' approvals are never
// touched.
func (r *runner) expire(ctx context.Context, a custody.Approval) error {
	at := a.ExpiresAt.Add(sinceExpiry)
	svc, err := approval.New(approval.Config{Store: onlyApproval{r.store, a.ID}, Ledger: r.ledger, Now: func() time.Time { return at }})
	if err != nil {
		return fmt.Errorf("expire approval %s: %w", a.ID, err)
	}
	if _, err := svc.ExpireDue(ctx); err != nil {
		return fmt.Errorf("expire approval %s: %w", a.ID, err)
	}
	return nil
}

// onlyApproval is an approval store that lists one approval.
type onlyApproval struct {
	custody.ApprovalStore
	id string
}

// Approvals lists the one approval when it has the status.
func (o onlyApproval) Approvals(ctx context.Context, status custody.ApprovalStatus) ([]custody.Approval, error) {
	a, err := o.Approval(ctx, o.id)
	if err != nil {
		return nil, err
	}
	if status != "" && a.Status != status {
		return nil, nil
	}
	return []custody.Approval{a}, nil
}

// runAll runs the traces on a pool of workers and returns how many
// finished. A data policy stop ends the run: no new trace starts. A
// failure of the ledger ends it with the error.
func (r *runner) runAll(ctx context.Context, specs []TraceSpec, workers int, progress func(Progress)) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan TraceSpec)
	var (
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(workers, len(specs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				if r.stopped.Load() {
					continue // handed out before the stop
				}
				err := r.trace(ctx, s)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				done++
				if progress != nil {
					progress(Progress{Done: done, Total: len(specs), Trace: s})
				}
				mu.Unlock()
			}
		}()
	}
	feed(ctx, next, specs, &r.stopped)
	wg.Wait()
	return done, firstErr
}

// feed hands out the specs until they run out, ctx ends or the run stops.
func feed(ctx context.Context, next chan<- TraceSpec, specs []TraceSpec, stopped *atomic.Bool) {
	defer close(next)
	for _, s := range specs {
		if stopped.Load() {
			return
		}
		select {
		case next <- s:
		case <-ctx.Done():
			return
		}
	}
}

// evidence is the sealed ledger of a run.
type evidence struct {
	jsonl   []byte
	pub     ed25519.PublicKey
	priv    ed25519.PrivateKey
	head    string
	entries int64
}

// seal writes a checkpoint covering every entry and exports the ledger;
// priv is the key the store signs with.
func seal(ctx context.Context, db Store, priv ed25519.PrivateKey) (evidence, error) {
	if _, err := db.Checkpoint(ctx); err != nil {
		return evidence{}, fmt.Errorf("final checkpoint: %w", err)
	}
	var buf bytes.Buffer
	if err := db.ExportJSONL(ctx, &buf); err != nil {
		return evidence{}, err
	}
	head, err := db.Head(ctx)
	if err != nil {
		return evidence{}, fmt.Errorf("ledger head: %w", err)
	}
	if !priv.Public().(ed25519.PublicKey).Equal(db.PublicKey()) {
		return evidence{}, errors.New("the signing key does not match the ledger's public key")
	}
	return evidence{jsonl: buf.Bytes(), pub: db.PublicKey(), priv: priv, head: head.Hash, entries: head.Seq}, nil
}
