package brain

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
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/llm"
)

// Commands returns custody brain.
func (Plugin) Commands() []systems.Command {
	return []systems.Command{{Name: "brain", Summary: "local knowledge room, context packets and the Brain over MCP", Run: runBrain}}
}

// subcommands are the subcommands of custody brain.
func subcommands() map[string]systems.Subcommand {
	return map[string]systems.Subcommand{
		"import":       {Summary: "load a room from its JSON form", Run: runImport},
		"packet":       {Summary: "print the context packet of a job about a node", Run: runPacket},
		"ask":          {Summary: "build, send to the Brain and ingest as proposals", Run: runAsk},
		"serve":        {Summary: "run the Brain as an MCP server (stdio or streamable HTTP)", Run: runServe},
		"review":       {Summary: "list the Brain's proposals; confirm or reject one as a user", Run: runReview},
		"check-schema": {Summary: "verify the packet contract itself", Run: runCheckSchema},
	}
}

// runBrain dispatches custody brain SUBCOMMAND.
func runBrain(ctx context.Context, env systems.Env, args []string) int {
	return env.Dispatch(ctx, "brain", subcommands(), args)
}

// roomFlag adds --room: the room file, $CUSTODY_ROOM or ./room.db.
func roomFlag(env systems.Env, fs *flag.FlagSet) *string {
	return fs.String("room", env.Setting("CUSTODY_ROOM", "room.db"), "room `FILE` (SQLite; env CUSTODY_ROOM)")
}

func openRoom(ctx context.Context, path string) (*Room, error) {
	return OpenRoom(ctx, path, RoomOptions{})
}

// printJSON writes v as indented JSON to Stdout.
func printJSON(env systems.Env, v any) int {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return env.Host.Fail(fmt.Errorf("write output: %w", err))
	}
	return systems.ExitOK
}

func runImport(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain import", "[--room FILE] ROOM.json")
	room := roomFlag(env, fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return systems.ExitUsage
	}
	fh, err := os.Open(fs.Arg(0))
	if err != nil {
		return env.Host.Fail(custody.Errorf(custody.ENOTFOUND, "cannot read %s", fs.Arg(0)))
	}
	defer fh.Close()
	f, err := DecodeRoomFile(fh)
	if err != nil {
		return env.Host.Fail(err)
	}
	r, err := openRoom(ctx, *room)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer r.Close()
	rep, err := r.Import(ctx, f)
	if err != nil {
		return env.Host.Fail(err)
	}
	return printJSON(env, map[string]any{"room": *room, "imported": rep})
}

// packetFlags are the flags that choose a packet.
type packetFlags struct {
	room, job, focus, privacy *string
}

func addPacketFlags(env systems.Env, fs *flag.FlagSet) packetFlags {
	return packetFlags{
		room:    roomFlag(env, fs),
		job:     fs.String("job", "", "the Brain `JOB`, one of: "+strings.Join(Jobs(), ", ")),
		focus:   fs.String("focus", "", "the focus node `ID`"),
		privacy: fs.String("privacy", "", "privacy `MODE` (local_summary_only, allow_filenames, allow_excerpts); the wire accepts only local_summary_only"),
	}
}

func (p packetFlags) options() BuildOptions {
	return BuildOptions{Job: *p.job, Focus: *p.focus, Privacy: *p.privacy}
}

func (p packetFlags) missing() bool { return *p.job == "" || *p.focus == "" }

// runPacket prints the packet the room builds and checks it as the wire
// will: a packet the wire would refuse (a privacy mode other than
// local_summary_only, say) is still printed, for inspection, but the
// command says why it would be refused and exits 1.
func runPacket(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain packet", "--room FILE --job JOB --focus NODE_ID [--privacy MODE]")
	pf := addPacketFlags(env, fs)
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if pf.missing() {
		fs.Usage()
		return systems.ExitUsage
	}
	reg, err := env.Host.Registry(*contracts)
	if err != nil {
		return env.Host.Fail(err)
	}
	r, err := openRoom(ctx, *pf.room)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer r.Close()
	p, err := r.Build(ctx, pf.options())
	if err != nil {
		return env.Host.Fail(err)
	}
	notePrivacy(env, *pf.privacy, p.PrivacyMode)
	if code := printJSON(env, p); code != systems.ExitOK {
		return code
	}
	return checkPacket(env, reg, p)
}

// checkPacket validates a built packet against its job's in schema, as
// the wire does before sending, and reports a refusal with its violations.
func checkPacket(env systems.Env, reg *contract.Registry, p Packet) int {
	raw, err := json.Marshal(p)
	if err != nil {
		return env.Host.Fail(fmt.Errorf("encode packet: %w", err))
	}
	err = reg.Validate(InRef(p.Job), raw)
	if err == nil {
		return systems.ExitOK
	}
	if custody.ErrorKind(err) != custody.EINVALID {
		return env.Host.Fail(err)
	}
	e := custody.AsError(err)
	return env.FailViolations(&custody.Error{Kind: custody.EINVALID, Violations: e.Violations,
		Message: "the wire would refuse this packet: it is not valid against " + InRef(p.Job)})
}

func runAsk(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain ask", "--room FILE --job JOB --focus ID [--brain URL | --brain-cmd CMD]")
	pf := addPacketFlags(env, fs)
	url := fs.String("brain", env.Setting("CUSTODY_BRAIN_URL", ""), "streamable HTTP `URL` of the Brain's MCP endpoint (env CUSTODY_BRAIN_URL)")
	cmdline := fs.String("brain-cmd", "", "`COMMAND` line of a stdio Brain (default: this custody, brain serve --stdio)")
	data := env.DataFlag(fs)
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if pf.missing() || (*url != "" && *cmdline != "") {
		fs.Usage()
		return systems.ExitUsage
	}
	dial, err := brainDialer(env.Stderr, *url, *cmdline)
	if err != nil {
		return env.Host.Fail(err)
	}
	reg, err := env.Host.Registry(*contracts)
	if err != nil {
		return env.Host.Fail(err)
	}
	ledger, err := env.Host.Ledger(*data)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer ledger.Close()
	r, err := openRoom(ctx, *pf.room)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer r.Close()
	w := &Wire{Contracts: reg, Ledger: ledger, Room: r, Brain: dial, Actor: "cli"}
	return ask(ctx, env, r, w, pf.options())
}

// ask builds, sends and ingests; a soft failure prints its reason and
// exits 1 with the room untouched.
func ask(ctx context.Context, env systems.Env, r *Room, w *Wire, o BuildOptions) int {
	p, err := r.Build(ctx, o)
	if err != nil {
		return env.Host.Fail(err)
	}
	notePrivacy(env, o.Privacy, p.PrivacyMode)
	raw, err := json.Marshal(p)
	if err != nil {
		return env.Host.Fail(fmt.Errorf("encode packet: %w", err))
	}
	a, err := w.Send(ctx, raw)
	if err != nil {
		printViolations(env.Stderr, err)
		return env.Host.Fail(err)
	}
	if !a.Answered() {
		printJSON(env, a)
		fmt.Fprintf(env.Stderr, "custody: the Brain gave no answer: %s\n", a.Reason)
		return systems.ExitFailed
	}
	rep, err := r.Ingest(ctx, o.Job, o.Focus, *a.Response)
	if err != nil {
		return env.Host.Fail(err)
	}
	return printJSON(env, map[string]any{"answer": a, "ingested": rep})
}

// notePrivacy says on stderr when a packet was built in another privacy
// mode than the one requested: Build falls back to a safer mode rather
// than fail, and the fallback should not pass unnoticed.
func notePrivacy(env systems.Env, requested, built string) {
	switch {
	case requested == "" || requested == built:
	case requested == allowExcerpts:
		fmt.Fprintf(env.Stderr, "custody: the packet is %s, not %s: no decision confirmed by a user grants %s in this room\n",
			built, requested, requested)
	default:
		fmt.Fprintf(env.Stderr, "custody: the packet is %s, not %q: that is not a privacy mode (%s, %s or %s)\n",
			built, requested, localSummaryOnly, allowFilenames, allowExcerpts)
	}
}

func printViolations(stderr io.Writer, err error) {
	for _, v := range custody.AsError(err).Violations {
		fmt.Fprintf(stderr, "  %s: %s (%s)\n", cmpOr(v.Instance, "/"), v.Message, v.Keyword)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// brainDialer returns how to reach the Brain: streamable HTTP at url, the
// stdio command cmdline, or this executable's brain serve --stdio. The
// command's stderr is stderr.
func brainDialer(stderr io.Writer, url, cmdline string) (Dialer, error) {
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
		cmd.Stderr = stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}, nil
}

func runServe(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain serve", "[--stdio | --addr HOST:PORT] [--llm URL]")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout")
	addr := fs.String("addr", "", "serve MCP streamable HTTP on `HOST:PORT`, at /mcp")
	model := fs.String("llm", env.Setting("CUSTODY_BRAIN_LLM", ""), "chat backend `URL` that words the answers (ollama://, openai://); deterministic when empty")
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *stdio == (*addr != "") {
		fmt.Fprintln(env.Stderr, "custody brain serve: give exactly one of --stdio and --addr")
		return systems.ExitUsage
	}
	reg, err := env.Host.Registry(*contracts)
	if err != nil {
		return env.Host.Fail(err)
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	opts := ServerOptions{Contracts: reg, Logger: logger}
	if *model != "" {
		b, err := llm.Open(*model)
		if err != nil {
			return env.Host.Fail(err)
		}
		opts.Answerer = Composer{Backend: b, Logger: logger}
	}
	srv := NewServer(opts)
	if *stdio {
		err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}})
	} else {
		err = serveHTTP(ctx, env.Stderr, srv, *addr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return env.Host.Fail(err)
	}
	return systems.ExitOK
}

// nopWriteCloser lets the MCP transport close Stdout without closing it.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }

// serveHTTP serves srv on addr until ctx ends.
func serveHTTP(ctx context.Context, stderr io.Writer, srv *mcp.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return custody.Errorf(custody.EUNAVAILABLE, "cannot listen on %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "custody brain: serving MCP at http://%s/mcp\n", ln.Addr())
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

func runReview(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain review", "[--room FILE] [--confirm ID | --reject ID --user NAME]")
	room := roomFlag(env, fs)
	confirm := fs.String("confirm", "", "confirm the proposal `ID`")
	reject := fs.String("reject", "", "reject the proposal `ID`")
	user := fs.String("user", env.Setting("CUSTODY_USER", ""), "the `NAME` of the user deciding (env CUSTODY_USER); required to decide")
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *confirm != "" && *reject != "" {
		fs.Usage()
		return systems.ExitUsage
	}
	r, err := openRoom(ctx, *room)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer r.Close()
	var n Node
	switch {
	case *confirm != "":
		n, err = r.Confirm(ctx, *confirm, *user)
	case *reject != "":
		n, err = r.Reject(ctx, *reject, *user)
	default:
		return listProposals(ctx, env, r)
	}
	if err != nil {
		return env.Host.Fail(err)
	}
	return printJSON(env, n)
}

func listProposals(ctx context.Context, env systems.Env, r *Room) int {
	ps, err := r.Proposals(ctx)
	if err != nil {
		return env.Host.Fail(err)
	}
	if ps == nil {
		ps = []Node{}
	}
	return printJSON(env, ps)
}

func runCheckSchema(_ context.Context, env systems.Env, args []string) int {
	fs := env.Flags("brain check-schema", "[--file CONTRACT.json]")
	file := fs.String("file", "", "check this contract `FILE` instead of the loaded "+SchemaID)
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	doc, err := packetContract(env, *file, *contracts)
	if err != nil {
		return env.Host.Fail(err)
	}
	problems, err := CheckSchema(doc)
	if err != nil {
		return env.Host.Fail(err)
	}
	for _, p := range problems {
		fmt.Fprintf(env.Stderr, "problem: %s\n", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(env.Stderr, "custody: the packet contract has %d problem(s)\n", len(problems))
		return systems.ExitFailed
	}
	fmt.Fprintf(env.Stdout, "ok: %d jobs, each with in and out, privacy_mode pinned to local_summary_only; shared definitions only; every object closed; summaries and explanations capped at 120; no cap loosened; no text field added\n", len(Jobs()))
	return systems.ExitOK
}

// packetContract returns the bytes of the packet contract: file when set,
// else the registry's, with the user contracts of contracts.
func packetContract(env systems.Env, file, contracts string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, custody.Errorf(custody.ENOTFOUND, "cannot read %s", file)
		}
		return b, nil
	}
	reg, err := env.Host.Registry(contracts)
	if err != nil {
		return nil, err
	}
	return reg.Document(SchemaID)
}
