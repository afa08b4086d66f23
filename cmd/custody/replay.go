package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/replay"
)

// policyCommands are the subcommands of `custody policy`.
func policyCommands() map[string]command {
	return map[string]command{
		"replay": {"decide the recorded calls again under a new configuration and say what would change", (*Main).runPolicyReplay},
	}
}

// runPolicy dispatches `custody policy SUBCOMMAND`.
func (m *Main) runPolicy(ctx context.Context, args []string) int {
	return m.dispatchGroup(ctx, "policy", policyCommands(), args)
}

// runPolicyReplay replays the ledger's calls under --config: it verifies
// the chain as it reads it, decides each call as the new policy would
// (nothing runs, nothing is written) and prints what would change. It
// exits 0, or 1 with --fail-on-change when anything would change, 1 when
// the ledger does not verify, 2 on a usage error or a bad configuration.
func (m *Main) runPolicyReplay(ctx context.Context, args []string) int {
	fs := m.flags("policy replay", "--config NEW.json [--since 7d] [--data DIR | --store postgres://...] [--json] [--fail-on-change]")
	cfgPath := fs.String("config", "", "the new configuration `FILE` to decide the recorded calls by")
	since := fs.String("since", "", "report only the calls of the last `DURATION` (7d, 36h); every call when empty")
	asJSON := fs.Bool("json", false, "print one JSON document")
	failOnChange := fs.Bool("fail-on-change", false, "exit 1 when any call would be decided otherwise")
	contracts := m.contractsFlag(fs)
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *cfgPath == "" {
		return m.flagError(fs, "--config is required")
	}
	window, err := parseSince(*since)
	if err != nil {
		return m.flagError(fs, err.Error())
	}
	f, err := m.loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody policy replay: %v\n", err)
		return exitUsage
	}
	o, err := replay.Configured(ctx, f, example.EnvelopeID, contract.Options{Contracts: seedContracts(), Dir: *contracts})
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody policy replay: config %s: %v\n", *cfgPath, err)
		return exitUsage
	}
	db, code := m.withStore(*store).openExisting(*data)
	if db == nil {
		return code
	}
	defer db.Close()
	opts := replay.Options{Keys: db.PublicKeys()}
	if window > 0 {
		opts.Since = time.Now().Add(-window)
	}
	rep, err := replay.Run(ctx, db, o, opts)
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		fmt.Fprintf(m.Stderr, "custody policy replay: %s: FAILED at seq %d: %s; nothing was replayed\n", m.storeName(*data), ve.Seq, ve.Reason)
		return exitFailed
	}
	var ce *replay.ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintf(m.Stderr, "custody policy replay: config %s: %v\n", *cfgPath, err)
		return exitUsage
	}
	if err != nil {
		return m.fail(err)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(m.Stdout, "%s\n", out)
	} else {
		printReplay(m.Stdout, rep)
	}
	if *failOnChange && rep.Changed > 0 {
		return exitFailed
	}
	return exitOK
}

// parseSince reads a duration in Go's form or in days ("7d").
func parseSince(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q: want a positive duration such as 7d or 36h", s)
	}
	return d, nil
}

// printReplay prints a replay's changes as a table.
func printReplay(w io.Writer, rep *replay.Report) {
	fmt.Fprintf(w, "verified %d entries (head %.16s); replayed %d calls: %d would change\n", rep.Entries, rep.Head, rep.Calls, rep.Changed)
	if len(rep.Changes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tAGENT\tCHANGE\tCALLS\tRULES\tEXAMPLE SEQS")
		for _, c := range rep.Changes {
			fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%d\t%s\t%s\n", c.Tool, c.Agent, c.From, c.To, c.Count,
				strings.Join(c.Rules, ", "), joinSeqs(c.Seqs))
		}
		tw.Flush()
	}
	for _, u := range rep.NotReplayed {
		fmt.Fprintf(w, "not replayed: %d calls %s (seqs %s)\n", u.Count, u.Note, joinSeqs(u.Seqs))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// joinSeqs lists seqs separated by commas.
func joinSeqs(seqs []int64) string {
	out := make([]string, len(seqs))
	for i, s := range seqs {
		out[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(out, ", ")
}
