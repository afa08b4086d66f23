package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// brainCommands are the subcommands of custody brain.
func brainCommands() map[string]command {
	return map[string]command{
		"import":       {"load a room from its JSON form", (*Main).runBrainImport},
		"packet":       {"print the context packet of a job about a node", (*Main).runBrainPacket},
		"ask":          {"build, send to the Brain and ingest as proposals", (*Main).runBrainAsk},
		"serve":        {"run the Brain as an MCP server (stdio or streamable HTTP)", (*Main).runBrainServe},
		"review":       {"list the Brain's proposals; confirm or reject one as a user", (*Main).runBrainReview},
		"check-schema": {"verify the packet contract itself", (*Main).runBrainCheckSchema},
	}
}

// runBrain dispatches custody brain SUBCOMMAND.
func (m *Main) runBrain(ctx context.Context, args []string) int {
	cmds := brainCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		m.brainUsage(cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "custody brain: unknown subcommand %q\n\n", args[0])
		m.brainUsage(cmds)
		return exitUsage
	}
	return c.run(m, ctx, args[1:])
}

func (m *Main) brainUsage(cmds map[string]command) {
	fmt.Fprintln(m.Stderr, "usage: custody brain SUBCOMMAND [flags]\n\nsubcommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.Stderr, "  %-13s %s\n", n, cmds[n].summary)
	}
}

// roomFlag adds --room: the room file, $CUSTODY_ROOM or ./room.db.
func (m *Main) roomFlag(fs *flag.FlagSet) *string {
	return fs.String("room", m.env("CUSTODY_ROOM", "room.db"), "room `FILE` (SQLite; env CUSTODY_ROOM)")
}

func (m *Main) openRoom(ctx context.Context, path string) (*brain.Room, error) {
	return brain.OpenRoom(ctx, path, brain.RoomOptions{})
}

// brainJSON writes v as indented JSON to Stdout.
func (m *Main) brainJSON(v any) int {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return m.fail(fmt.Errorf("write output: %w", err))
	}
	return exitOK
}

func (m *Main) runBrainImport(ctx context.Context, args []string) int {
	fs := m.flags("brain import", "[--room FILE] ROOM.json")
	room := m.roomFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	fh, err := os.Open(fs.Arg(0))
	if err != nil {
		return m.fail(custody.Errorf(custody.ENOTFOUND, "cannot read %s", fs.Arg(0)))
	}
	defer fh.Close()
	f, err := brain.DecodeRoomFile(fh)
	if err != nil {
		return m.fail(err)
	}
	r, err := m.openRoom(ctx, *room)
	if err != nil {
		return m.fail(err)
	}
	defer r.Close()
	rep, err := r.Import(ctx, f)
	if err != nil {
		return m.fail(err)
	}
	return m.brainJSON(map[string]any{"room": *room, "imported": rep})
}

// packetFlags are the flags that choose a packet.
type packetFlags struct {
	room, job, focus, privacy *string
}

func (m *Main) packetFlags(fs *flag.FlagSet) packetFlags {
	return packetFlags{
		room:    m.roomFlag(fs),
		job:     fs.String("job", "", "the Brain `JOB`, one of: "+strings.Join(brain.Jobs(), ", ")),
		focus:   fs.String("focus", "", "the focus node `ID`"),
		privacy: fs.String("privacy", "", "privacy `MODE` (local_summary_only, allow_filenames, allow_excerpts); the wire accepts only local_summary_only"),
	}
}

func (p packetFlags) options() brain.BuildOptions {
	return brain.BuildOptions{Job: *p.job, Focus: *p.focus, Privacy: *p.privacy}
}

func (p packetFlags) missing() bool { return *p.job == "" || *p.focus == "" }

// runBrainPacket prints the packet the room builds and checks it as the
// wire will: a packet the wire would refuse (a privacy mode other than
// local_summary_only, say) is still printed, for inspection, but the
// command says why it would be refused and exits 1.
func (m *Main) runBrainPacket(ctx context.Context, args []string) int {
	fs := m.flags("brain packet", "--room FILE --job JOB --focus NODE_ID [--privacy MODE]")
	pf := m.packetFlags(fs)
	loadReg := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if pf.missing() {
		fs.Usage()
		return exitUsage
	}
	reg, err := loadReg()
	if err != nil {
		return m.fail(err)
	}
	r, err := m.openRoom(ctx, *pf.room)
	if err != nil {
		return m.fail(err)
	}
	defer r.Close()
	p, err := r.Build(ctx, pf.options())
	if err != nil {
		return m.fail(err)
	}
	if code := m.brainJSON(p); code != exitOK {
		return code
	}
	return m.checkPacket(reg, p)
}

// checkPacket validates a built packet against its job's in schema, as
// the wire does before sending, and reports a refusal with its violations.
func (m *Main) checkPacket(reg *contract.Registry, p brain.Packet) int {
	raw, err := json.Marshal(p)
	if err != nil {
		return m.fail(fmt.Errorf("encode packet: %w", err))
	}
	err = reg.Validate(brain.InRef(p.Job), raw)
	if err == nil {
		return exitOK
	}
	if custody.ErrorKind(err) != custody.EINVALID {
		return m.fail(err)
	}
	e := custody.AsError(err)
	return m.failViolations(&custody.Error{Kind: custody.EINVALID, Violations: e.Violations,
		Message: "the wire would refuse this packet: it is not valid against " + brain.InRef(p.Job)})
}

func (m *Main) runBrainAsk(ctx context.Context, args []string) int {
	fs := m.flags("brain ask", "--room FILE --job JOB --focus ID [--brain URL | --brain-cmd CMD]")
	pf := m.packetFlags(fs)
	url := fs.String("brain", m.env("CUSTODY_BRAIN_URL", ""), "streamable HTTP `URL` of the Brain's MCP endpoint (env CUSTODY_BRAIN_URL)")
	cmdline := fs.String("brain-cmd", "", "`COMMAND` line of a stdio Brain (default: this custody, brain serve --stdio)")
	data := m.dataFlag(fs)
	loadReg := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if pf.missing() || (*url != "" && *cmdline != "") {
		fs.Usage()
		return exitUsage
	}
	dial, err := m.brainDialer(*url, *cmdline)
	if err != nil {
		return m.fail(err)
	}
	reg, err := loadReg()
	if err != nil {
		return m.fail(err)
	}
	ledger, err := m.openData(*data)
	if err != nil {
		return m.fail(err)
	}
	defer ledger.Close()
	r, err := m.openRoom(ctx, *pf.room)
	if err != nil {
		return m.fail(err)
	}
	defer r.Close()
	w := &brain.Wire{Contracts: reg, Ledger: ledger, Room: r, Brain: dial, Actor: "cli"}
	return m.ask(ctx, r, w, pf.options())
}

// ask builds, sends and ingests; a soft failure prints its reason and
// exits 1 with the room untouched.
func (m *Main) ask(ctx context.Context, r *brain.Room, w *brain.Wire, o brain.BuildOptions) int {
	p, err := r.Build(ctx, o)
	if err != nil {
		return m.fail(err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return m.fail(fmt.Errorf("encode packet: %w", err))
	}
	a, err := w.Send(ctx, raw)
	if err != nil {
		m.printViolations(err)
		return m.fail(err)
	}
	if !a.Answered() {
		m.brainJSON(a)
		fmt.Fprintf(m.Stderr, "custody: the Brain gave no answer: %s\n", a.Reason)
		return exitFailed
	}
	rep, err := r.Ingest(ctx, o.Job, o.Focus, *a.Response)
	if err != nil {
		return m.fail(err)
	}
	return m.brainJSON(map[string]any{"answer": a, "ingested": rep})
}

func (m *Main) printViolations(err error) {
	for _, v := range custody.AsError(err).Violations {
		fmt.Fprintf(m.Stderr, "  %s: %s (%s)\n", cmpOr(v.Instance, "/"), v.Message, v.Keyword)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// brainDialer returns how to reach the Brain: streamable HTTP at url, the
// stdio command cmdline, or this executable's brain serve --stdio.
func (m *Main) brainDialer(url, cmdline string) (brain.Dialer, error) {
	if url != "" {
		return func() (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}, nil
		}, nil
	}
	argv := strings.Fields(cmdline)
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this executable: %w", err)
		}
		argv = []string{exe, "brain", "serve", "--stdio"}
	}
	return func() (mcp.Transport, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = m.Stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}, nil
}

func (m *Main) runBrainServe(ctx context.Context, args []string) int {
	fs := m.flags("brain serve", "[--stdio | --addr HOST:PORT] [--llm URL]")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout")
	addr := fs.String("addr", "", "serve MCP streamable HTTP on `HOST:PORT`, at /mcp")
	model := fs.String("llm", m.env("CUSTODY_BRAIN_LLM", ""), "chat backend `URL` that words the answers (ollama://, openai://); deterministic when empty")
	loadReg := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *stdio == (*addr != "") {
		fmt.Fprintln(m.Stderr, "custody brain serve: give exactly one of --stdio and --addr")
		return exitUsage
	}
	reg, err := loadReg()
	if err != nil {
		return m.fail(err)
	}
	logger := slog.New(slog.NewTextHandler(m.Stderr, nil))
	opts := brain.ServerOptions{Contracts: reg, Logger: logger}
	if *model != "" {
		b, err := llm.Open(*model)
		if err != nil {
			return m.fail(err)
		}
		opts.Answerer = brain.Composer{Backend: b, Logger: logger}
	}
	srv := brain.NewServer(opts)
	if *stdio {
		err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(m.Stdin), Writer: nopWriteCloser{m.Stdout}})
	} else {
		err = m.serveBrainHTTP(ctx, srv, *addr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return m.fail(err)
	}
	return exitOK
}

// nopWriteCloser lets the MCP transport close Stdout without closing it.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }

// serveBrainHTTP serves srv on addr until ctx ends.
func (m *Main) serveBrainHTTP(ctx context.Context, srv *mcp.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return custody.Errorf(custody.EUNAVAILABLE, "cannot listen on %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(m.Stderr, "custody brain: serving MCP at http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve brain: %w", err)
	}
	return nil
}

func (m *Main) runBrainReview(ctx context.Context, args []string) int {
	fs := m.flags("brain review", "[--room FILE] [--confirm ID | --reject ID --user NAME]")
	room := m.roomFlag(fs)
	confirm := fs.String("confirm", "", "confirm the proposal `ID`")
	reject := fs.String("reject", "", "reject the proposal `ID`")
	user := fs.String("user", m.env("CUSTODY_USER", ""), "the `NAME` of the user deciding (env CUSTODY_USER); required to decide")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *confirm != "" && *reject != "" {
		fs.Usage()
		return exitUsage
	}
	r, err := m.openRoom(ctx, *room)
	if err != nil {
		return m.fail(err)
	}
	defer r.Close()
	var n brain.Node
	switch {
	case *confirm != "":
		n, err = r.Confirm(ctx, *confirm, *user)
	case *reject != "":
		n, err = r.Reject(ctx, *reject, *user)
	default:
		return m.listProposals(ctx, r)
	}
	if err != nil {
		return m.fail(err)
	}
	return m.brainJSON(n)
}

func (m *Main) listProposals(ctx context.Context, r *brain.Room) int {
	ps, err := r.Proposals(ctx)
	if err != nil {
		return m.fail(err)
	}
	if ps == nil {
		ps = []brain.Node{}
	}
	return m.brainJSON(ps)
}

func (m *Main) runBrainCheckSchema(ctx context.Context, args []string) int {
	fs := m.flags("brain check-schema", "[--file CONTRACT.json]")
	file := fs.String("file", "", "check this contract `FILE` instead of the loaded "+brain.SchemaID)
	loadReg := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	doc, err := m.packetContract(*file, loadReg)
	if err != nil {
		return m.fail(err)
	}
	problems, err := brain.CheckSchema(doc)
	if err != nil {
		return m.fail(err)
	}
	for _, p := range problems {
		fmt.Fprintf(m.Stderr, "problem: %s\n", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(m.Stderr, "custody: the packet contract has %d problem(s)\n", len(problems))
		return exitFailed
	}
	fmt.Fprintf(m.Stdout, "ok: %d jobs, each with in and out, privacy_mode pinned to local_summary_only; shared definitions only; every object closed; summaries and explanations capped at 120; no cap loosened\n", len(brain.Jobs()))
	return exitOK
}

// packetContract returns the bytes of the packet contract: file when set,
// else the registry's.
func (m *Main) packetContract(file string, loadReg func() (*contract.Registry, error)) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, custody.Errorf(custody.ENOTFOUND, "cannot read %s", file)
		}
		return b, nil
	}
	reg, err := loadReg()
	if err != nil {
		return nil, err
	}
	return reg.Document(brain.SchemaID)
}
