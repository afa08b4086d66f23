package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// ledgerCommands are the subcommands of `custody ledger`.
func ledgerCommands() map[string]command {
	return map[string]command{
		"append":        {"append an entry (for scripts) and print its receipt", (*Main).runLedgerAppend},
		"check-receipt": {"verify a receipt offline: the log key, its inclusion proof and the witnesses' cosignatures", (*Main).runLedgerCheckReceipt},
		"export":        {"write the ledger and its checkpoints as JSONL", (*Main).runLedgerExport},
		"note-key":      {"print the origin and note verifier key witnesses follow the ledger by", (*Main).runLedgerNoteKey},
		"prove":         {"print an entry's inclusion proof, or two checkpoints' consistency proof", (*Main).runLedgerProve},
		"rotate-key":    {"replace the checkpoint signing key, recording it on the ledger", (*Main).runLedgerRotateKey},
		"seal":          {"sign a checkpoint over the entries after the last one", (*Main).runLedgerSeal},
		"show":          {"print entries, one line each", (*Main).runLedgerShow},
		"verify":        {"verify the chain and signed checkpoints of a store or an export", (*Main).runLedgerVerify},
	}
}

// runLedger dispatches `custody ledger SUBCOMMAND`.
func (m *Main) runLedger(ctx context.Context, args []string) int {
	cmds := ledgerCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		m.ledgerUsage(cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "custody ledger: unknown subcommand %q\n\n", args[0])
		m.ledgerUsage(cmds)
		return exitUsage
	}
	return c.run(m, ctx, args[1:])
}

func (m *Main) ledgerUsage(cmds map[string]command) {
	fmt.Fprintln(m.Stderr, "usage: custody ledger SUBCOMMAND [flags]\n\nsubcommands:")
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(m.Stderr, "  %-10s %s\n", name, cmds[name].summary)
	}
}

// runLedgerVerify verifies a store (--data) or a JSONL export (--jsonl,
// with --pubkey to check the checkpoint signatures). Verification is
// strict: a signed checkpoint must cover the last entry, unless
// --allow-unsealed-tail accepts entries after the last checkpoint (and the
// summary says how many). It exits 0 with a one-line summary when the
// ledger is intact, 1 naming the first bad seq and the reason when it is
// not, 2 on a usage error or an unreadable input.
func (m *Main) runLedgerVerify(ctx context.Context, args []string) int {
	fs := m.flags("ledger verify", "(--data DIR | --store postgres://... | --jsonl FILE) [--pubkey FILE] [--allow-unsealed-tail] [--witness-key KEY ... [--witness-quorum N]]")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	jsonl := fs.String("jsonl", "", "verify this JSONL export `FILE` (- for stdin) instead of a store")
	pubFile := fs.String("pubkey", "", "check checkpoint signatures against the PEM public keys in `FILE` (every key the ledger used, as export writes them)")
	unsealed := fs.Bool("allow-unsealed-tail", false, "accept entries after the last signed checkpoint, saying how many")
	wf := addWitnessFlags(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *jsonl != "" && (isSet(fs, "data") || isSet(fs, "store")) {
		return m.flagError(fs, "give --data or --store, or --jsonl, not both")
	}
	ws, quorum, err := wf.verifiers()
	if err != nil {
		return m.flagError(fs, err.Error())
	}
	var keys []ed25519.PublicKey
	if *pubFile != "" {
		var err error
		if keys, err = readPublicKeys(*pubFile); err != nil {
			fmt.Fprintf(m.Stderr, "custody ledger verify: %v\n", err)
			return exitUsage
		}
	}
	v := verification{allowUnsealed: *unsealed, ws: ws, quorum: quorum}
	if *jsonl != "" {
		return m.verifyJSONL(*jsonl, keys, v)
	}
	return m.withStore(*store).verifyStore(ctx, *data, keys, v)
}

// verification is what a verify requires: a signed checkpoint over the
// last entry unless allowUnsealed, and witnesses' cosignatures on every
// checkpoint note (quorum of ws) when ws are given.
type verification struct {
	allowUnsealed bool
	ws            []note.Verifier
	quorum        int
}

// verifyJSONL verifies an export in one pass: the chain and its
// checkpoints, and the checkpoint notes against the entries. Its memory
// does not grow with the export, read from stdin ("-") too.
func (m *Main) verifyJSONL(file string, keys []ed25519.PublicKey, v verification) int {
	what := "custody ledger verify: " + file
	r := m.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(m.Stderr, "custody ledger verify: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		r = f
	}
	nc := tlog.NewNoteChecker(keys, v.ws, v.quorum)
	var noteErr error
	seen := func(l ledger.Line) {
		switch {
		case noteErr != nil:
		case l.Entry != nil:
			noteErr = nc.Entry(l.Entry.Hash)
		case l.Note != nil:
			noteErr = nc.Note(l.Note)
		}
	}
	report, err := ledger.VerifyJSONLSeeing(bufio.NewReaderSize(r, 1<<16), seen, keys...)
	if code := m.verified(what, report, err, v); code != exitOK {
		return code
	}
	return m.notesChecked(what, nc, noteErr, v.ws, v.quorum)
}

func (m *Main) verifyStore(ctx context.Context, dir string, keys []ed25519.PublicKey, v verification) int {
	db, code := m.openExisting(dir)
	if db == nil {
		return code
	}
	defer db.Close()
	if keys == nil {
		keys = db.PublicKeys()
	}
	what := "custody ledger verify: " + m.storeName(dir)
	sq, isSQLite := db.(*sqlite.DB)
	if !isSQLite {
		// A PostgreSQL store keeps one key; its notes are SQLite's alone.
		var pub ed25519.PublicKey
		if len(keys) > 0 {
			pub = keys[len(keys)-1]
		}
		report, err := db.VerifyWith(ctx, pub)
		return m.verified(what, report, err, v)
	}
	nc := tlog.NewNoteChecker(keys, v.ws, v.quorum)
	prog := m.newProgress("custody ledger verify")
	report, err := sq.VerifyNotes(ctx, nc, prog.report, keys...)
	prog.end()
	var ne *tlog.NoteError
	noteErr := err
	if errors.As(err, &ne) {
		err = nil
	}
	if code := m.verified(what, report, err, v); code != exitOK {
		return code
	}
	return m.notesChecked(what, nc, noteErr, v.ws, v.quorum)
}

// verified prints the outcome of a verification and returns its exit code.
func (m *Main) verified(what string, report ledger.Report, err error, v verification) int {
	if err == nil && !v.allowUnsealed {
		if err = report.Strict(); err != nil {
			defer fmt.Fprintln(m.Stderr, "  the chain holds, but no signature vouches for these entries; if they are genuine,"+
				" `custody ledger seal` signs them in a store, and --allow-unsealed-tail accepts them as they are")
		}
	}
	if err == nil {
		fmt.Fprintln(m.Stdout, report.String())
		if n := report.Unsealed(); n > 0 {
			fmt.Fprintf(m.Stdout, "unsealed tail: %d %s after the last checkpoint (seq %d to %d), accepted by --allow-unsealed-tail\n",
				n, pluralEntries(n), report.Covered+1, report.Entries)
		}
		return exitOK
	}
	var ve *ledger.VerifyError
	var le *ledger.LineError
	switch {
	case errors.As(err, &ve):
		where := ""
		if errors.As(err, &le) {
			where = fmt.Sprintf(" (line %d)", le.Line)
		}
		fmt.Fprintf(m.Stderr, "%s: FAILED at seq %d%s: %s\n", what, ve.Seq, where, ve.Reason)
		return exitFailed
	case errors.As(err, &le):
		fmt.Fprintf(m.Stderr, "%s: FAILED: not a valid ledger export: %v\n", what, le)
		return exitFailed
	default:
		return m.fail(err)
	}
}

// runLedgerExport writes the store's ledger as JSONL to --out (stdout by
// default) and says where the public key that verifies it is.
func (m *Main) runLedgerExport(ctx context.Context, args []string) int {
	fs := m.flags("ledger export", "[--data DIR | --store postgres://...] [--out FILE] [--pubkey-out FILE]")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	out := fs.String("out", "-", "write the JSONL export to `FILE` (- for stdout)")
	pubOut := fs.String("pubkey-out", "", "also copy the PEM public key to `FILE`")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	db, code := m.withStore(*store).openExisting(*data)
	if db == nil {
		return code
	}
	defer db.Close()
	if err := m.export(ctx, db, *out); err != nil {
		return m.fail(err)
	}
	pubPath := db.PublicKeyFile()
	if *pubOut != "" {
		var text []byte
		for _, k := range db.PublicKeys() {
			text = append(text, ledger.MarshalPublicKey(k)...)
		}
		if err := os.WriteFile(*pubOut, text, 0o644); err != nil {
			fmt.Fprintf(m.Stderr, "custody ledger export: %v\n", err)
			return exitUsage
		}
		pubPath = *pubOut
	}
	if pubPath == "" {
		pubPath = "KEY (get it with --pubkey-out KEY)"
	}
	fmt.Fprintf(m.Stderr, "exported %d entries; verify with: custody ledger verify --jsonl %s --pubkey %s\n",
		db.Size(), *out, pubPath)
	return exitOK
}

// export writes the JSONL export to out through a buffer: one write a
// 64 KiB, not one an entry.
func (m *Main) export(ctx context.Context, db dataStore, out string) error {
	prog := m.newProgress("custody ledger export")
	defer prog.end()
	var w io.Writer = m.Stdout
	var f *os.File
	if out != "-" {
		var err error
		// The export holds every body on the ledger: readable by its
		// owner only, as the data directory's files are.
		if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return custody.Errorf(custody.EINVALID, "export: %v", err)
		}
		w = f
	}
	size := db.Size()
	bw := bufio.NewWriterSize(&lineCounter{w: w, lines: func(n int64) { prog.report(min(n, size), size) }}, 1<<16)
	err := db.ExportJSONL(ctx, bw)
	if err == nil {
		if ferr := bw.Flush(); ferr != nil {
			err = custody.Errorf(custody.EUNAVAILABLE, "export: %v", ferr)
		}
	}
	if f != nil {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = custody.Errorf(custody.EUNAVAILABLE, "export: %v", cerr)
		}
	}
	return err
}

// lineCounter passes writes on to w and tells lines how many lines have
// gone through: about the entries exported, checkpoints being a line
// every thousand entries or so.
type lineCounter struct {
	w     io.Writer
	n     int64
	lines func(int64)
}

func (c *lineCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(bytes.Count(b[:n], []byte{'\n'}))
	c.lines(c.n)
	return n, err
}

// runLedgerShow prints the entries selected by the flags, one line each,
// or as JSONL with --json.
func (m *Main) runLedgerShow(ctx context.Context, args []string) int {
	fs := m.flags("ledger show", "[--data DIR | --store postgres://...] [--trace ID] [--kind K] [--ref KEY=VALUE] [--after N] [--limit N] [--interrupted] [--json]")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	var q custody.Query
	fs.StringVar(&q.Trace, "trace", "", "only entries of trace `ID`")
	fs.StringVar(&q.Kind, "kind", "", "only entries of kind `K`")
	fs.Int64Var(&q.After, "after", 0, "only entries with seq greater than `N`")
	fs.IntVar(&q.Limit, "limit", 0, "at most `N` entries (0: the store default, 1000)")
	refs := refsFlag(fs)
	asJSON := fs.Bool("json", false, "print JSONL, as export does")
	interrupted := fs.Bool("interrupted", false, "only the calls a crash interrupted: their call.interrupted entries (--kind "+custody.KindCallInterrupted+")")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	q.Refs = *refs
	if *interrupted {
		if q.Kind != "" && q.Kind != custody.KindCallInterrupted {
			return m.flagUsage(fs, "--interrupted shows call.interrupted entries: it goes with no other --kind")
		}
		q.Kind = custody.KindCallInterrupted
	}
	db, code := m.withStore(*store).openExisting(*data)
	if db == nil {
		return code
	}
	defer db.Close()
	entries, err := db.Entries(ctx, q)
	if err != nil {
		return m.fail(err)
	}
	if *asJSON {
		var line []byte
		for i := range entries {
			line = ledger.AppendEntryLine(line[:0], &entries[i])
			m.Stdout.Write(line)
		}
		return exitOK
	}
	m.printEntries(entries)
	return exitOK
}

func (m *Main) printEntries(entries []custody.Entry) {
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tKIND\tTRACE\tACTOR\tREFS\tHASH")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.Seq, e.At, orDash(e.Kind), orDash(e.Trace), orDash(e.Actor), formatRefs(e.Refs), e.Hash[:min(12, len(e.Hash))])
	}
	tw.Flush()
}

func formatRefs(refs map[string]string) string {
	if len(refs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(refs))
	for _, k := range slices.Sorted(maps.Keys(refs)) {
		parts = append(parts, k+"="+refs[k])
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runLedgerAppend appends one entry whose body is read from --body and
// prints its receipt as JSON. Meant for scripts; the gateway appends its
// own evidence.
func (m *Main) runLedgerAppend(ctx context.Context, args []string) int {
	fs := m.flags("ledger append", "--kind K --body FILE [--trace T] [--actor A] [--ref KEY=VALUE ...] [--data DIR | --store postgres://...]")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	var e custody.Entry
	fs.StringVar(&e.Kind, "kind", "", "entry kind (required)")
	body := fs.String("body", "", "read the JSON body from `FILE` (- for stdin; required)")
	fs.StringVar(&e.Trace, "trace", "", "trace `ID`")
	fs.StringVar(&e.Actor, "actor", "cli", "who appends")
	refs := refsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if e.Kind == "" || *body == "" {
		return m.flagError(fs, "--kind and --body are required")
	}
	e.Refs = *refs
	raw, err := m.readBody(*body)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger append: %v\n", err)
		return exitUsage
	}
	e.Body = raw
	db, err := m.withStore(*store).openStore(*data)
	if err != nil {
		return m.fail(err)
	}
	defer db.Close()
	sealed, err := db.Append(ctx, e)
	if err != nil {
		return m.fail(err)
	}
	out, _ := json.Marshal(custody.Receipt{Seq: sealed.Seq, Hash: sealed.Hash})
	fmt.Fprintf(m.Stdout, "%s\n", out)
	return exitOK
}

func (m *Main) readBody(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(m.Stdin)
	}
	return os.ReadFile(file)
}

// openExisting opens the store in dir, or the one $CUSTODY_STORE names
// (read-only, without its signing key), for reading, refusing to create
// one where there is none: a typo in --data must not verify an empty
// ledger. On failure it returns a nil store and the exit code.
func (m *Main) openExisting(dir string) (dataStore, int) {
	if m.env("CUSTODY_STORE", "") != "" {
		db, err := m.openStoreReadOnly()
		if err != nil {
			return nil, m.fail(err)
		}
		return db, exitOK
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.DatabaseFile)); err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger: no store in %s (set --data or CUSTODY_DATA)\n", dir)
		return nil, exitUsage
	}
	db, err := m.openDataWith(dir, sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, m.fail(err)
	}
	return db, exitOK
}

// storeName names the store a command reads: $CUSTODY_STORE without its
// password, else dir.
func (m *Main) storeName(dir string) string {
	if url := m.env("CUSTODY_STORE", ""); url != "" {
		return redact(url)
	}
	return dir
}

// readPublicKeys reads every PEM public key in file.
func readPublicKeys(file string) ([]ed25519.PublicKey, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	keys, err := ledger.ParsePublicKeys(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return keys, nil
}

func pluralEntries(n int64) string {
	if n == 1 {
		return "entry"
	}
	return "entries"
}

// flagError prints msg and the usage of fs and returns the usage exit code.
func (m *Main) flagError(fs *flag.FlagSet, msg string) int {
	fmt.Fprintf(m.Stderr, "%s: %s\n", fs.Name(), msg)
	fs.Usage()
	return exitUsage
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// refsMap is a repeatable KEY=VALUE flag.
type refsMap map[string]string

func refsFlag(fs *flag.FlagSet) *map[string]string {
	refs := map[string]string{}
	fs.Var((*refsMap)(&refs), "ref", "a ref `KEY=VALUE` (repeatable)")
	return &refs
}

// String implements flag.Value.
func (r *refsMap) String() string {
	if r == nil {
		return ""
	}
	return formatRefs(*r)
}

// Set implements flag.Value.
func (r *refsMap) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	(*r)[k] = val
	return nil
}
