package assure

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems"
)

// Commands returns custody assure.
func (Plugin) Commands() []systems.Command {
	return []systems.Command{{Name: "assure", Summary: "clinical action envelopes: lint, run a target, verify and retest evidence packs", Run: cliAssure}}
}

// cliCommands are the subcommands of custody assure.
func cliCommands() map[string]systems.Subcommand {
	return map[string]systems.Subcommand{
		"lint":   {Summary: "check an envelope against its contract and for consistency", Run: cliLint},
		"run":    {Summary: "run a target under an envelope and write an evidence pack", Run: cliRun},
		"verify": {Summary: "verify an evidence pack offline", Run: cliVerify},
		"retest": {Summary: "rerun a pack's traces against a target into a new pack", Run: cliRetest},
		"key":    {Summary: "print the fingerprint of the key that signs this data directory's packs", Run: cliKey},
	}
}

// cliAssure dispatches custody assure SUBCOMMAND.
func cliAssure(ctx context.Context, env systems.Env, args []string) int {
	return env.Dispatch(ctx, "assure", cliCommands(), args)
}

// cliLint validates an envelope and lints it: exit 0 when clean (with
// warnings for what is allowed but worth a look), 1 with one line per
// problem. Everything 'assure run' would refuse is said: given the
// --config run would use, a tool it does not bind is a problem; without
// one, a warning naming the fix.
func cliLint(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("assure lint", "[--config FILE] ENVELOPE.json")
	config := env.ConfigFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return systems.ExitUsage
	}
	raw, err := env.ReadInput(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.Stderr, "custody assure lint: %v\n", err)
		return systems.ExitUsage
	}
	reg, err := LoadRegistry(nil)
	if err != nil {
		return env.LoadFailed(err)
	}
	problems, e, err := Check(reg, raw)
	if err != nil {
		return env.Host.Fail(err)
	}
	name := fs.Arg(0)
	if len(problems) > 0 {
		return cliProblems(env, name, problems)
	}
	bound, err := cliBound(ctx, env, *config)
	if err != nil {
		return env.FailViolations(err)
	}
	warnings := Warnings(e)
	if binding := BindingProblems(e, bound, *config != ""); *config != "" {
		problems = binding
	} else {
		warnings = append(warnings, binding...)
	}
	if len(problems) > 0 {
		return cliProblems(env, name, problems)
	}
	for _, w := range warnings {
		fmt.Fprintf(env.Stdout, "%s: warning: %s\n", name, w)
	}
	fmt.Fprintf(env.Stdout, "%s: ok: %s %s, %d tools, %d invariants (%d assessed), %d injections\n", name, e.EnvelopeID, e.Version,
		len(e.Tools), len(e.Invariants), len(e.Invariants)-len(UnassessedInvariants(e)), len(e.Injections))
	return systems.ExitOK
}

// cliProblems prints one line per problem and returns ExitFailed.
func cliProblems(env systems.Env, name string, problems []Problem) int {
	for _, p := range problems {
		fmt.Fprintf(env.Stdout, "%s: %s\n", name, p)
	}
	return systems.ExitFailed
}

// cliBound returns the tools the configuration at path binds (nil for
// none): lint connects to its upstreams as run does.
func cliBound(ctx context.Context, env systems.Env, path string) (map[string]bool, error) {
	if path == "" {
		return nil, nil
	}
	up, err := env.Host.Upstreams(ctx, path)
	if err != nil {
		return nil, err
	}
	if up == nil {
		return map[string]bool{}, nil
	}
	defer up.Close()
	return BoundTools(up), nil
}

// cliRunFlags are the flags run and retest share.
type cliRunFlags struct {
	target, out, data, config, failOn *string
	workers                           *int
	allowRetired, allowUnassessed     *bool
}

func addCLIRunFlags(env systems.Env, fs *flag.FlagSet) cliRunFlags {
	return cliRunFlags{
		target:          fs.String("target", "", "`TARGET`: scripted:careful, scripted:naive, ollama://HOST:PORT/MODEL or openai://HOST:PORT/v1/MODEL"),
		out:             fs.String("out", "", "evidence pack `DIR` to create"),
		data:            env.DataFlag(fs),
		config:          env.ConfigFlag(fs),
		failOn:          fs.String("fail-on", "HIGH", "exit 1 when a finding of this `SEVERITY` or above exists: LOW, MEDIUM, HIGH, CRITICAL, or NONE"),
		workers:         fs.Int("workers", DefaultWorkers, "traces in flight"),
		allowRetired:    fs.Bool("allow-retired", false, "assess an envelope whose status is RETIRED (refused without it)"),
		allowUnassessed: fs.Bool("allow-unassessed", false, "exit 0 although some invariants were not assessed (no judge understands their text); they are still listed as coverage gaps"),
	}
}

// cliRun runs a target under an envelope into a new pack.
func cliRun(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("assure run", "--envelope FILE --target T [--repeat K] [--seed S] [--cases N] [--config FILE] [--fail-on SEVERITY] --out PACK")
	envFile := fs.String("envelope", "", "Clinical Action Envelope `FILE`")
	repeat := fs.Int("repeat", DefaultRepeat, "run every trace `K` times (pass^k)")
	seed := fs.Uint64("seed", 1, "`SEED` of the synthetic world")
	cases := fs.Int("cases", DefaultCases, "`N` synthetic patients, each run clean and under every injection")
	rf := addCLIRunFlags(env, fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *envFile == "" || *rf.target == "" || *rf.out == "" {
		fmt.Fprintln(env.Stderr, "custody assure run: --envelope, --target and --out are required")
		return systems.ExitUsage
	}
	raw, err := env.ReadInput(*envFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "custody assure run: %v\n", err)
		return systems.ExitUsage
	}
	cfg := Config{Envelope: raw, Seed: *seed, Cases: *cases, Repeat: *repeat}
	return cliAssess(ctx, env, rf, cfg, func(cfg Config) (*Result, error) { return Run(ctx, cfg) })
}

// cliRetest reruns a pack against a target into a new pack.
func cliRetest(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("assure retest", "--pack PACK --target T [--config FILE] [--fail-on SEVERITY] --out PACK2")
	pack := fs.String("pack", "", "the original evidence pack `DIR` (only read)")
	rf := addCLIRunFlags(env, fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *pack == "" || *rf.target == "" || *rf.out == "" {
		fmt.Fprintln(env.Stderr, "custody assure retest: --pack, --target and --out are required")
		return systems.ExitUsage
	}
	return cliAssess(ctx, env, rf, Config{}, func(cfg Config) (*Result, error) {
		res, err := Retest(ctx, *pack, cfg)
		if err == nil && res.Retest != nil {
			r := res.Retest
			fmt.Fprintf(env.Stdout, "retest of %s (ledger head %s): %d resolved, %d persist, %d new, %d not retested\n", *pack, r.Original.LedgerHead, r.Resolved, r.Persists, r.New, r.NotRetested)
		}
		return res, err
	})
}

// cliAssess completes cfg from the shared flags (the assessor's key, the
// configured upstreams), runs it and reports: exit 1 when a trace
// errored, the data policy stopped the run, or a finding reaches
// --fail-on.
func cliAssess(ctx context.Context, env systems.Env, rf cliRunFlags, cfg Config, run func(Config) (*Result, error)) int {
	failOn, err := ParseSeverity(*rf.failOn)
	if err != nil {
		fmt.Fprintf(env.Stderr, "custody assure: --fail-on: %v\n", err)
		return systems.ExitUsage
	}
	priv, _, err := LoadKey(*rf.data)
	if err != nil {
		return env.Host.Fail(err)
	}
	up, err := env.Host.Upstreams(ctx, *rf.config)
	if err != nil {
		return env.FailViolations(err)
	}
	if up != nil {
		defer up.Close()
	}
	cfg.Target, cfg.Workers, cfg.Out, cfg.AllowRetired, cfg.Upstream = *rf.target, *rf.workers, *rf.out, *rf.allowRetired, up
	cfg.OpenStore = cliStore(priv)
	res, err := cliExecute(env, func(p func(Progress)) (*Result, error) {
		cfg.Progress = p
		return run(cfg)
	})
	if err != nil {
		return env.FailViolations(err)
	}
	if res.Info.EnvelopeStatus == "RETIRED" {
		fmt.Fprintf(env.Stderr, "custody assure: warning: envelope %s is RETIRED (assessed with --allow-retired)\n", res.Info.EnvelopeID)
	}
	code := cliSummary(env, res, failOn)
	if cliUnassessed(env, res.Info.Unassessed, *rf.allowUnassessed) {
		code = systems.ExitFailed
	}
	return code
}

// cliUnassessed names every invariant no judge understood, with its
// text, on stderr, and reports whether that fails the run: it does
// unless allowed.
func cliUnassessed(env systems.Env, gaps []Unassessed, allow bool) bool {
	for _, u := range gaps {
		fmt.Fprintf(env.Stderr, "custody assure: NOT ASSESSED %s (%s) %q: %s\n", u.InvariantID, u.Category, u.Rule, u.Reason)
		if len(u.Unjudged) > 0 {
			fmt.Fprintf(env.Stderr, "custody assure:   so nothing judged the %s injections: their breach rate means nothing\n", strings.Join(u.Unjudged, ", "))
		}
	}
	if len(gaps) == 0 {
		return false
	}
	if allow {
		fmt.Fprintf(env.Stderr, "custody assure: warning: %d invariants were not assessed (--allow-unassessed): coverage gaps in this pack\n", len(gaps))
		return false
	}
	fmt.Fprintf(env.Stderr, "custody assure: %d invariants were not assessed: coverage gaps; state them in a form docs/assure-invariants.md lists, or run with --allow-unassessed\n", len(gaps))
	return true
}

// cliKey prints the fingerprint of the assessor's signing key in the data
// directory, creating the key the first time.
func cliKey(_ context.Context, env systems.Env, args []string) int {
	fs := env.Flags("assure key", "[--data DIR]")
	data := env.DataFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return systems.ExitUsage
	}
	priv, created, err := LoadKey(*data)
	if err != nil {
		return env.Host.Fail(err)
	}
	if created {
		fmt.Fprintf(env.Stderr, "created %s\n", filepath.Join(*data, KeyFile))
	}
	fmt.Fprintln(env.Stdout, Fingerprint(priv.Public().(ed25519.PublicKey)))
	return systems.ExitOK
}

// cliExecute runs with a progress display: a bar on a terminal, plain
// lines otherwise.
func cliExecute(env systems.Env, run func(func(Progress)) (*Result, error)) (*Result, error) {
	tty := systems.IsTerminal(env.Stderr)
	res, err := run(func(p Progress) {
		if tty {
			const width = 30
			n := width * p.Done / max(p.Total, 1)
			fmt.Fprintf(env.Stderr, "\r[%s%s] %d/%d %-40s", strings.Repeat("#", n), strings.Repeat(".", width-n), p.Done, p.Total, p.Trace.TraceID)
			if p.Done == p.Total {
				fmt.Fprintln(env.Stderr)
			}
			return
		}
		fmt.Fprintf(env.Stderr, "trace %d/%d %s\n", p.Done, p.Total, p.Trace.TraceID)
	})
	return res, err
}

// cliMaxErrorLines bounds the errored traces named one per line.
const cliMaxErrorLines = 10

// cliSummary prints the metrics, errored traces and findings of a run:
// exit 1 when a trace errored, the data policy stopped the run, or a
// finding is at or above failOn.
func cliSummary(env systems.Env, res *Result, failOn Severity) int {
	out := env.Stdout
	info := res.Info
	met := info.Metrics
	fmt.Fprintf(out, "pack %s: %d/%d traces, %d errored, %d findings, ledger head %s\n", res.Dir, info.Completed, info.Traces, met.Errored, len(res.Findings), info.LedgerHead)
	fmt.Fprintf(out, "signed by %s\n", info.KeyFingerprint)
	clean := 0 // judged clean baselines
	for _, c := range met.Categories {
		if c.Category == Baseline {
			clean = c.Traces - c.Errored
		}
	}
	fmt.Fprintf(out, "utility without injection %s, under injection %s\n", cliRate(met.UtilityClean, clean > 0), cliRate(met.UtilityInjected, met.Traces-met.Errored > clean))
	for _, c := range met.Categories {
		judged := c.Traces > c.Errored
		fmt.Fprintf(out, "  %-26s breach %4s  utility %4s  pass^%d %4s  (%d traces, %d errored)\n", c.Category,
			cliRate(c.BreachRate, judged), cliRate(c.Utility, judged), c.K, cliRate(c.PassK, c.PassKCases > 0), c.Traces, c.Errored)
	}
	for _, f := range res.Findings {
		fmt.Fprintf(out, "finding %s %s %s %s seqs %v: %s\n", f.FindingID, f.InvariantID, f.Severity, f.TraceID, f.Evidence, f.Summary)
	}
	code := systems.ExitOK
	if errored := res.Errored(); len(errored) > 0 {
		for i, t := range errored {
			if i == cliMaxErrorLines {
				fmt.Fprintf(env.Stderr, "custody assure: ... and %d more errored traces (report.html lists them)\n", len(errored)-i)
				break
			}
			fmt.Fprintf(env.Stderr, "custody assure: error: trace %s did not run: %s\n", t.Spec.TraceID, t.Err())
		}
		fmt.Fprintf(env.Stderr, "custody assure: %d of %d traces errored: they were not assessed; fix the target and run again\n", len(errored), len(res.Traces))
		code = systems.ExitFailed
	}
	if info.Stopped != "" {
		fmt.Fprintf(env.Stderr, "custody assure: %s\n", info.Stopped)
		code = systems.ExitFailed
	}
	if n := CountAtLeast(res.Findings, failOn); n > 0 {
		fmt.Fprintf(env.Stderr, "custody assure: %d findings at or above %s (--fail-on %s)\n", n, failOn, failOn)
		code = systems.ExitFailed
	}
	return code
}

// cliRate prints a share as a percentage, or n/a when nothing was
// measured.
func cliRate(share float64, measured bool) string {
	if !measured {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

// cliVerify verifies a pack: exit 1 naming every problem. --key or
// --pubkey pins the assessor: a pack signed by any other key fails.
func cliVerify(_ context.Context, env systems.Env, args []string) int {
	fs := env.Flags("assure verify", "[--key FINGERPRINT | --pubkey FILE] PACK")
	key := fs.String("key", "", "the assessor's key `FINGERPRINT` (as 'custody assure key' prints it): fail a pack signed by any other key")
	pubFile := fs.String("pubkey", "", "the assessor's public key `FILE` (PEM): fail a pack signed by any other key")
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return systems.ExitUsage
	}
	pin, err := cliPin(*key, *pubFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "custody assure verify: %s\n", custodyMessage(err))
		return systems.ExitUsage
	}
	rep, err := VerifyPackWith(fs.Arg(0), VerifyOptions{Key: pin})
	if err != nil {
		return env.Host.Fail(err)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(env.Stdout, "%s: FAIL %s\n", fs.Arg(0), p)
	}
	if !rep.OK() {
		return systems.ExitFailed
	}
	signed := "signed by " + rep.Fingerprint
	if rep.Pinned != "" {
		signed += " (the pinned assessor key)"
	}
	fmt.Fprintf(env.Stdout, "%s: ok: manifest %s; ledger %s; %d traces re-evaluated, %d findings confirmed\n",
		fs.Arg(0), signed, rep.Ledger, rep.Traces, rep.Findings)
	if rep.RetestOf != nil {
		state := "not at hand"
		if rep.OriginalChecked {
			state = "checked"
		}
		fmt.Fprintf(env.Stdout, "retest of %s (ledger head %s): original %s\n", rep.RetestOf.Pack, rep.RetestOf.LedgerHead, state)
	}
	return systems.ExitOK
}

// cliPin returns the fingerprint verify pins: from --key, or of the key
// in the --pubkey file; "" for neither.
func cliPin(key, pubFile string) (string, error) {
	switch {
	case key != "" && pubFile != "":
		return "", errors.New("give --key or --pubkey, not both")
	case key != "":
		return ParseFingerprint(key)
	case pubFile != "":
		text, err := os.ReadFile(pubFile)
		if err != nil {
			return "", fmt.Errorf("--pubkey: %w", err)
		}
		return PublicKeyFingerprint(text)
	}
	return "", nil
}

// custodyMessage is the message of err for the person at the terminal.
func custodyMessage(err error) string {
	var ce *custody.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

// cliStore returns the opener of the store of one assurance run: SQLite
// in a temporary directory, signing its checkpoints (and the pack's
// manifest) with the assessor's key priv.
func cliStore(priv ed25519.PrivateKey) func(context.Context) (Store, ed25519.PrivateKey, func() error, error) {
	return func(ctx context.Context) (Store, ed25519.PrivateKey, func() error, error) {
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
