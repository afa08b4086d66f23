package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/assure"
	"github.com/custody-dev/custody/upstream"
)

// assureCommands are the subcommands of `custody assure`.
func assureCommands() map[string]command {
	return map[string]command{
		"lint":   {"check an envelope against its contract and for consistency", (*Main).runAssureLint},
		"run":    {"run a target under an envelope and write an evidence pack", (*Main).runAssureRun},
		"verify": {"verify an evidence pack offline", (*Main).runAssureVerify},
		"retest": {"rerun a pack's traces against a target into a new pack", (*Main).runAssureRetest},
		"key":    {"print the fingerprint of the key that signs this data directory's packs", (*Main).runAssureKey},
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
	for _, w := range assure.Warnings(env) {
		fmt.Fprintf(m.Stdout, "%s: warning: %s\n", fs.Arg(0), w)
	}
	fmt.Fprintf(m.Stdout, "%s: ok: %s %s, %d tools, %d invariants, %d injections\n", fs.Arg(0), env.EnvelopeID, env.Version, len(env.Tools), len(env.Invariants), len(env.Injections))
	return exitOK
}

// runFlags are the flags run and retest share.
type runFlags struct {
	target, out, data, config, failOn *string
	workers                           *int
	allowRetired                      *bool
}

func (m *Main) addRunFlags(fs *flag.FlagSet) runFlags {
	return runFlags{
		target:       fs.String("target", "", "`TARGET`: scripted:careful, scripted:naive, ollama://HOST:PORT/MODEL or openai://HOST:PORT/v1/MODEL"),
		out:          fs.String("out", "", "evidence pack `DIR` to create"),
		data:         m.dataFlag(fs),
		config:       m.configFlag(fs),
		failOn:       fs.String("fail-on", "HIGH", "exit 1 when a finding of this `SEVERITY` or above exists: LOW, MEDIUM, HIGH, CRITICAL, or NONE"),
		workers:      fs.Int("workers", assure.DefaultWorkers, "traces in flight"),
		allowRetired: fs.Bool("allow-retired", false, "assess an envelope whose status is RETIRED (refused without it)"),
	}
}

// runAssureRun runs a target under an envelope into a new pack.
func (m *Main) runAssureRun(ctx context.Context, args []string) int {
	fs := m.flags("assure run", "--envelope FILE --target T [--repeat K] [--seed S] [--cases N] [--config FILE] [--fail-on SEVERITY] --out PACK")
	envFile := fs.String("envelope", "", "Clinical Action Envelope `FILE`")
	repeat := fs.Int("repeat", assure.DefaultRepeat, "run every trace `K` times (pass^k)")
	seed := fs.Uint64("seed", 1, "`SEED` of the synthetic world")
	cases := fs.Int("cases", assure.DefaultCases, "`N` synthetic patients, each run clean and under every injection")
	rf := m.addRunFlags(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *envFile == "" || *rf.target == "" || *rf.out == "" {
		fmt.Fprintln(m.Stderr, "custody assure run: --envelope, --target and --out are required")
		return exitUsage
	}
	raw, err := m.readInput(*envFile)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody assure run: %v\n", err)
		return exitUsage
	}
	cfg := assure.Config{Envelope: raw, Seed: *seed, Cases: *cases, Repeat: *repeat}
	return m.assureRun(ctx, rf, cfg, func(cfg assure.Config) (*assure.Result, error) { return assure.Run(ctx, cfg) })
}

// runAssureRetest reruns a pack against a target into a new pack.
func (m *Main) runAssureRetest(ctx context.Context, args []string) int {
	fs := m.flags("assure retest", "--pack PACK --target T [--config FILE] [--fail-on SEVERITY] --out PACK2")
	pack := fs.String("pack", "", "the original evidence pack `DIR` (only read)")
	rf := m.addRunFlags(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *pack == "" || *rf.target == "" || *rf.out == "" {
		fmt.Fprintln(m.Stderr, "custody assure retest: --pack, --target and --out are required")
		return exitUsage
	}
	return m.assureRun(ctx, rf, assure.Config{}, func(cfg assure.Config) (*assure.Result, error) {
		res, err := assure.Retest(ctx, *pack, cfg)
		if err == nil && res.Retest != nil {
			r := res.Retest
			fmt.Fprintf(m.Stdout, "retest of %s (ledger head %s): %d resolved, %d persist, %d new, %d not retested\n", *pack, r.Original.LedgerHead, r.Resolved, r.Persists, r.New, r.NotRetested)
		}
		return res, err
	})
}

// assureRun completes cfg from the shared flags (the assessor's key, the
// configured upstreams), runs it and reports: exit 1 when a trace errored,
// the data policy stopped the run, or a finding reaches --fail-on.
func (m *Main) assureRun(ctx context.Context, rf runFlags, cfg assure.Config, run func(assure.Config) (*assure.Result, error)) int {
	failOn, err := assure.ParseSeverity(*rf.failOn)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody assure: --fail-on: %v\n", err)
		return exitUsage
	}
	priv, _, err := assure.LoadKey(*rf.data)
	if err != nil {
		return m.fail(err)
	}
	up, closeUp, err := m.assureUpstreams(ctx, *rf.config)
	if err != nil {
		return m.failViolations(err)
	}
	defer closeUp()
	cfg.Target, cfg.Workers, cfg.Out, cfg.AllowRetired, cfg.Upstream = *rf.target, *rf.workers, *rf.out, *rf.allowRetired, up
	cfg.OpenStore = assureStore(priv)
	res, err := m.assureExecute(func(p func(assure.Progress)) (*assure.Result, error) {
		cfg.Progress = p
		return run(cfg)
	})
	if err != nil {
		return m.failViolations(err)
	}
	if res.Info.EnvelopeStatus == "RETIRED" {
		fmt.Fprintf(m.Stderr, "custody assure: warning: envelope %s is RETIRED (assessed with --allow-retired)\n", res.Info.EnvelopeID)
	}
	return m.assureSummary(res, failOn)
}

// assureUpstreams connects to the upstreams of the configuration at path
// for a run to bind its envelope's tools to; none without a path.
func (m *Main) assureUpstreams(ctx context.Context, path string) (*upstream.Set, func(), error) {
	f, err := m.loadConfig(path)
	if err != nil || f == nil || !hasUpstreams(f) {
		return nil, func() {}, err
	}
	up, _, err := m.openUpstreams(ctx, f, map[string][]byte{})
	if err != nil {
		return nil, nil, err
	}
	return up, func() { up.Close() }, nil
}

// runAssureKey prints the fingerprint of the assessor's signing key in the
// data directory, creating the key the first time.
func (m *Main) runAssureKey(_ context.Context, args []string) int {
	fs := m.flags("assure key", "[--data DIR]")
	data := m.dataFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	priv, created, err := assure.LoadKey(*data)
	if err != nil {
		return m.fail(err)
	}
	if created {
		fmt.Fprintf(m.Stderr, "created %s\n", filepath.Join(*data, assure.KeyFile))
	}
	fmt.Fprintln(m.Stdout, assure.Fingerprint(priv.Public().(ed25519.PublicKey)))
	return exitOK
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

// maxErrorLines bounds the errored traces named one per line.
const maxErrorLines = 10

// assureSummary prints the metrics, errored traces and findings of a run:
// exit 1 when a trace errored, the data policy stopped the run, or a
// finding is at or above failOn.
func (m *Main) assureSummary(res *assure.Result, failOn assure.Severity) int {
	info := res.Info
	met := info.Metrics
	fmt.Fprintf(m.Stdout, "pack %s: %d/%d traces, %d errored, %d findings, ledger head %s\n", res.Dir, info.Completed, info.Traces, met.Errored, len(res.Findings), info.LedgerHead)
	fmt.Fprintf(m.Stdout, "signed by %s\n", info.KeyFingerprint)
	clean := 0 // judged clean baselines
	for _, c := range met.Categories {
		if c.Category == assure.Baseline {
			clean = c.Traces - c.Errored
		}
	}
	fmt.Fprintf(m.Stdout, "utility without injection %s, under injection %s\n", rate(met.UtilityClean, clean > 0), rate(met.UtilityInjected, met.Traces-met.Errored > clean))
	for _, c := range met.Categories {
		judged := c.Traces > c.Errored
		fmt.Fprintf(m.Stdout, "  %-26s breach %4s  utility %4s  pass^%d %4s  (%d traces, %d errored)\n", c.Category,
			rate(c.BreachRate, judged), rate(c.Utility, judged), c.K, rate(c.PassK, c.PassKCases > 0), c.Traces, c.Errored)
	}
	for _, f := range res.Findings {
		fmt.Fprintf(m.Stdout, "finding %s %s %s %s seqs %v: %s\n", f.FindingID, f.InvariantID, f.Severity, f.TraceID, f.Evidence, f.Summary)
	}
	code := exitOK
	if errored := res.Errored(); len(errored) > 0 {
		for i, t := range errored {
			if i == maxErrorLines {
				fmt.Fprintf(m.Stderr, "custody assure: ... and %d more errored traces (report.html lists them)\n", len(errored)-i)
				break
			}
			fmt.Fprintf(m.Stderr, "custody assure: error: trace %s did not run: %s\n", t.Spec.TraceID, t.Err())
		}
		fmt.Fprintf(m.Stderr, "custody assure: %d of %d traces errored: they were not assessed; fix the target and run again\n", len(errored), len(res.Traces))
		code = exitFailed
	}
	if info.Stopped != "" {
		fmt.Fprintf(m.Stderr, "custody assure: %s\n", info.Stopped)
		code = exitFailed
	}
	if n := assure.CountAtLeast(res.Findings, failOn); n > 0 {
		fmt.Fprintf(m.Stderr, "custody assure: %d findings at or above %s (--fail-on %s)\n", n, failOn, failOn)
		code = exitFailed
	}
	return code
}

// rate prints a share as a percentage, or n/a when nothing was measured.
func rate(share float64, measured bool) string {
	if !measured {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*share)
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

// assureStore returns the opener of the store of one assurance run:
// SQLite in a temporary directory, signing its checkpoints (and the pack's
// manifest) with the assessor's key priv.
func assureStore(priv ed25519.PrivateKey) func(context.Context) (assure.Store, ed25519.PrivateKey, func() error, error) {
	return func(ctx context.Context) (assure.Store, ed25519.PrivateKey, func() error, error) {
		parent, err := os.MkdirTemp("", "custody-assure-")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("run store: %w", err)
		}
		dir := filepath.Join(parent, "data")
		err = sqlite.WriteKey(dir, priv)
		var db *sqlite.DB
		if err == nil {
			db, err = sqlite.Open(ctx, dir, sqlite.Options{})
		}
		if err != nil {
			os.RemoveAll(parent)
			return nil, nil, nil, fmt.Errorf("run store: %w", err)
		}
		return db, priv, func() error { return errors.Join(db.Close(), os.RemoveAll(parent)) }, nil
	}
}
