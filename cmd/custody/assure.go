package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sort"
	"strings"

	"github.com/custody-dev/custody/assure"
	"github.com/custody-dev/custody/internal/tempstore"
)

// assureCommands are the subcommands of `custody assure`.
func assureCommands() map[string]command {
	return map[string]command{
		"lint":   {"check an envelope against its contract and for consistency", (*Main).runAssureLint},
		"run":    {"run a target under an envelope and write an evidence pack", (*Main).runAssureRun},
		"verify": {"verify an evidence pack offline", (*Main).runAssureVerify},
		"retest": {"rerun a pack's traces against a target into a new pack", (*Main).runAssureRetest},
	}
}

// runAssure dispatches `custody assure SUBCOMMAND`.
func (m *Main) runAssure(ctx context.Context, args []string) int {
	cmds := assureCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		m.assureUsage(cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "custody assure: unknown subcommand %q\n\n", args[0])
		m.assureUsage(cmds)
		return exitUsage
	}
	return c.run(m, ctx, args[1:])
}

func (m *Main) assureUsage(cmds map[string]command) {
	fmt.Fprintln(m.Stderr, "usage: custody assure SUBCOMMAND [flags]\n\nsubcommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.Stderr, "  %-8s %s\n", n, cmds[n].summary)
	}
}

// runAssureLint validates an envelope and lints it: exit 0 when clean, 1
// with one line per problem.
func (m *Main) runAssureLint(_ context.Context, args []string) int {
	fs := m.flags("assure lint", "ENVELOPE.json")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	raw, err := m.readInput(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody assure lint: %v\n", err)
		return exitUsage
	}
	reg, err := assure.LoadRegistry(nil)
	if err != nil {
		return m.loadFailed(err)
	}
	problems, env, err := assure.Check(reg, raw)
	if err != nil {
		return m.fail(err)
	}
	for _, p := range problems {
		fmt.Fprintf(m.Stdout, "%s: %s\n", fs.Arg(0), p)
	}
	if len(problems) > 0 {
		return exitFailed
	}
	fmt.Fprintf(m.Stdout, "%s: ok: %s %s, %d tools, %d invariants, %d injections\n", fs.Arg(0), env.EnvelopeID, env.Version, len(env.Tools), len(env.Invariants), len(env.Injections))
	return exitOK
}

// runAssureRun runs a target under an envelope into a new pack.
func (m *Main) runAssureRun(ctx context.Context, args []string) int {
	fs := m.flags("assure run", "--envelope FILE --target T [--repeat K] [--seed S] [--cases N] --out PACK")
	envFile := fs.String("envelope", "", "Clinical Action Envelope `FILE`")
	target := fs.String("target", "", "`TARGET`: scripted:careful, scripted:naive, ollama://HOST:PORT/MODEL or openai://HOST:PORT/v1/MODEL")
	repeat := fs.Int("repeat", assure.DefaultRepeat, "run every trace `K` times (pass^k)")
	seed := fs.Uint64("seed", 1, "`SEED` of the synthetic world")
	cases := fs.Int("cases", assure.DefaultCases, "`N` synthetic patients, each run clean and under every injection")
	workers := fs.Int("workers", assure.DefaultWorkers, "traces in flight")
	out := fs.String("out", "", "evidence pack `DIR` to create")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *envFile == "" || *target == "" || *out == "" {
		fmt.Fprintln(m.Stderr, "custody assure run: --envelope, --target and --out are required")
		return exitUsage
	}
	raw, err := m.readInput(*envFile)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody assure run: %v\n", err)
		return exitUsage
	}
	cfg := assure.Config{Envelope: raw, Target: *target, Seed: *seed, Cases: *cases, Repeat: *repeat, Workers: *workers, Out: *out,
		OpenStore: assureStore}
	res, err := m.assureExecute(func(p func(assure.Progress)) (*assure.Result, error) {
		cfg.Progress = p
		return assure.Run(ctx, cfg)
	})
	if err != nil {
		return m.failViolations(err)
	}
	return m.assureSummary(res)
}

// runAssureRetest reruns a pack against a target into a new pack.
func (m *Main) runAssureRetest(ctx context.Context, args []string) int {
	fs := m.flags("assure retest", "--pack PACK --target T --out PACK2")
	pack := fs.String("pack", "", "the original evidence pack `DIR` (only read)")
	target := fs.String("target", "", "`TARGET` to rerun")
	workers := fs.Int("workers", assure.DefaultWorkers, "traces in flight")
	out := fs.String("out", "", "new evidence pack `DIR` to create")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *pack == "" || *target == "" || *out == "" {
		fmt.Fprintln(m.Stderr, "custody assure retest: --pack, --target and --out are required")
		return exitUsage
	}
	cfg := assure.Config{Target: *target, Workers: *workers, Out: *out, OpenStore: assureStore}
	res, err := m.assureExecute(func(p func(assure.Progress)) (*assure.Result, error) {
		cfg.Progress = p
		return assure.Retest(ctx, *pack, cfg)
	})
	if err != nil {
		return m.failViolations(err)
	}
	if r := res.Retest; r != nil {
		fmt.Fprintf(m.Stdout, "retest of %s (ledger head %s): %d resolved, %d persist, %d new\n", *pack, r.Original.LedgerHead, r.Resolved, r.Persists, r.New)
	}
	return m.assureSummary(res)
}

// assureExecute runs with a progress display: a bar on a terminal, plain
// lines otherwise.
func (m *Main) assureExecute(run func(func(assure.Progress)) (*assure.Result, error)) (*assure.Result, error) {
	tty := isTerminal(m.Stderr)
	res, err := run(func(p assure.Progress) {
		if tty {
			const width = 30
			n := width * p.Done / max(p.Total, 1)
			fmt.Fprintf(m.Stderr, "\r[%s%s] %d/%d %-40s", strings.Repeat("#", n), strings.Repeat(".", width-n), p.Done, p.Total, p.Trace.TraceID)
			if p.Done == p.Total {
				fmt.Fprintln(m.Stderr)
			}
			return
		}
		fmt.Fprintf(m.Stderr, "trace %d/%d %s\n", p.Done, p.Total, p.Trace.TraceID)
	})
	return res, err
}

// assureSummary prints the metrics and findings of a run.
func (m *Main) assureSummary(res *assure.Result) int {
	info := res.Info
	fmt.Fprintf(m.Stdout, "pack %s: %d/%d traces, %d findings, ledger head %s\n", res.Dir, info.Completed, info.Traces, len(res.Findings), info.LedgerHead)
	fmt.Fprintf(m.Stdout, "utility without injection %.0f%%, under injection %.0f%%\n", 100*info.Metrics.UtilityClean, 100*info.Metrics.UtilityInjected)
	for _, c := range info.Metrics.Categories {
		fmt.Fprintf(m.Stdout, "  %-26s breach %3.0f%%  utility %3.0f%%  pass^%d %3.0f%%  (%d traces)\n", c.Category, 100*c.BreachRate, 100*c.Utility, c.K, 100*c.PassK, c.Traces)
	}
	for _, f := range res.Findings {
		fmt.Fprintf(m.Stdout, "finding %s %s %s %s seqs %v: %s\n", f.FindingID, f.InvariantID, f.Severity, f.TraceID, f.Evidence, f.Summary)
	}
	if info.Stopped != "" {
		fmt.Fprintf(m.Stderr, "custody assure: %s\n", info.Stopped)
		return exitFailed
	}
	return exitOK
}

// runAssureVerify verifies a pack: exit 1 naming every problem.
func (m *Main) runAssureVerify(_ context.Context, args []string) int {
	fs := m.flags("assure verify", "PACK")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	rep, err := assure.VerifyPack(fs.Arg(0))
	if err != nil {
		return m.fail(err)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(m.Stdout, "%s: FAIL %s\n", fs.Arg(0), p)
	}
	if !rep.OK() {
		return exitFailed
	}
	fmt.Fprintf(m.Stdout, "%s: ok: manifest signed by %s; ledger %s; %d traces re-evaluated, %d findings confirmed\n",
		fs.Arg(0), rep.Fingerprint, rep.Ledger, rep.Traces, rep.Findings)
	if rep.RetestOf != nil {
		state := "not at hand"
		if rep.OriginalChecked {
			state = "checked"
		}
		fmt.Fprintf(m.Stdout, "retest of %s (ledger head %s): original %s\n", rep.RetestOf.Pack, rep.RetestOf.LedgerHead, state)
	}
	return exitOK
}

// assureStore opens the store of one assurance run: SQLite in a
// temporary directory, with a key made here that the harness seals its
// pack with.
func assureStore(ctx context.Context) (assure.Store, ed25519.PrivateKey, func() error, error) {
	db, priv, release, err := tempstore.Open(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return db, priv, release, nil
}
