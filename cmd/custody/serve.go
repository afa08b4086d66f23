package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/chaincheck"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/telemetry"
	"github.com/custody-dev/custody/tlog"
	"github.com/custody-dev/custody/web"
)

// Files in the data directory holding the tokens serve creates when none
// are configured.
const (
	operatorTokenFile = "operator.token"
	agentTokenFile    = "agent.token"
)

// expireEvery is how often serve expires undecided approvals.
const expireEvery = 5 * time.Second

// serveSettings are serve's settings after flags, environment and file.
type serveSettings struct {
	addr, data, contracts, nats string
	store                       string
	llm, llmEdge, room          string
	// systems are the seed systems to serve; simulate runs their
	// simulated feeds.
	systems  []string
	simulate bool
	// cfg is the configuration file; an empty one when none was given.
	cfg *config.File
	// hasFile says a configuration file was given.
	hasFile bool
	// witnesses cosign every checkpoint.
	witnesses []witnessConfig
	// tlsCert and tlsKey, both or neither, make serve answer HTTPS.
	tlsCert, tlsKey string
	// mesh is how the mesh is joined over NATS: flags over the file.
	mesh config.Mesh
	// requireAll fails the start when an upstream cannot be reached.
	requireAll bool
	// cpuprofile, when set, is where a CPU profile of the whole run goes.
	cpuprofile string
}

// servedSystems is where the domain systems plug into serve: their tools join
// the envelope, their apps the console (at /apps/{name}/), and their
// runners run beside the server until shutdown.
type servedSystems struct {
	Tools   []gate.Tool
	Apps    func(st *stack) ([]web.App, error)
	Runners []func(ctx context.Context, st *stack) error
}

// runServe serves the HTTP API, MCP at /mcp and the operator console:
//
//	custody serve [--config FILE] [--addr 127.0.0.1:8080] [--data DIR] [--systems peas,mesh [--simulate]]
//
// With no configuration it serves the example envelope alone; with one,
// the upstream tools it governs as well. The seed systems are served only
// when asked for, and their simulated feeds only with --simulate, so that
// the ledger holds only what really happened.
// It runs until ctx ends (SIGINT, SIGTERM), then shuts down gracefully.
func (m *Main) runServe(ctx context.Context, args []string) int {
	set, code, ok := m.serveFlags(args)
	if !ok {
		return code
	}
	stopProfile, err := startCPUProfile(set.cpuprofile)
	if err != nil {
		return m.fail(err)
	}
	err = m.serve(ctx, set)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return m.fail(err)
	}
	return exitOK
}

// serveFlags parses the flags and the config file.
func (m *Main) serveFlags(args []string) (serveSettings, int, bool) {
	fset := m.flags("serve", "[--config FILE] [--addr HOST:PORT] [--data DIR] [--store postgres://...] [--contracts DIR] [--systems peas,mesh] [--simulate] [--llm URL] [--nats URL]")
	addr := fset.String("addr", "", "`HOST:PORT` to listen on (env CUSTODY_ADDR, default 127.0.0.1:8080)")
	cpuprofile := fset.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE`, saved at shutdown (go tool pprof reads it)")
	data := m.dataFlag(fset)
	store := m.storeFlag(fset)
	contracts := m.contractsFlag(fset)
	llmURL := fset.String("llm", "", "LLM `URL` for the agent and composer hops: template, ollama://HOST:PORT/MODEL, openai://HOST:PORT/v1/MODEL (env CUSTODY_LLM)")
	edgeURL := fset.String("llm-edge", "", "edge text backend `URL` for language hops (env CUSTODY_LLM_EDGE; default: the main backend)")
	room := fset.String("room", "", "a Brain room `FILE` (room.db) whose review queue the console shows (env CUSTODY_BRAIN_ROOM)")
	natsURL := fset.String("nats", "", "join the wildfire mesh over NATS at `URL` (env CUSTODY_NATS; default: a simulated mesh)")
	meshRoster := fset.String("mesh-roster", "", "roster `FILE` of the mesh's admitted nodes and aggregators (with --nats)")
	meshKey := fset.String("mesh-key", "", "the desk's nkey seed `FILE`, which signs broadcasts (with --nats)")
	meshSubjects := fset.String("mesh-subjects", "", "subject `PREFIX` of this deployment's mesh (default mesh-<ledger id prefix>)")
	meshConsumer := fset.String("mesh-consumer", "", "durable consumer `NAME` of this deployment's desk (default custody-desk-<ledger id prefix>)")
	configPath := m.configFlag(fset)
	systemsList := fset.String("systems", "", "seed systems to serve beside the configured tools: `LIST` of peas, mesh (default: the config file's \"systems\")")
	simulate := fset.Bool("simulate", false, "run the seed systems' simulated feeds (a pile-up feed, a simulated wildfire mesh)")
	var witnessFlag stringList
	tlsCert := fset.String("tls-cert", "", "serve HTTPS with the certificate chain in PEM `FILE` (env CUSTODY_TLS_CERT; with --tls-key)")
	tlsKey := fset.String("tls-key", "", "the private key in PEM `FILE` of --tls-cert (env CUSTODY_TLS_KEY)")
	requireAll := fset.Bool("require-all-upstreams", false, "fail at start when an MCP server cannot be reached (config \"requireAllUpstreams\"; default: serve degraded until it comes up)")
	fset.Var(&witnessFlag, "witness", "have the witness at `URL=KEY` cosign every checkpoint (repeatable; env CUSTODY_WITNESSES, space separated)")
	if ok, code := m.parse(fset, args); !ok {
		return serveSettings{}, code, false
	}
	if fset.NArg() > 0 {
		return serveSettings{}, m.flagUsage(fset, "unexpected arguments"), false
	}
	set := serveSettings{cfg: &config.File{}, simulate: *simulate, requireAll: *requireAll, cpuprofile: *cpuprofile}
	if *configPath != "" {
		cfg, err := config.Load(*configPath, m.Getenv)
		if err != nil {
			return set, m.flagUsage(fset, err.Error()), false
		}
		m.configWarnings(*configPath, cfg)
		set.cfg, set.hasFile = cfg, true
	}
	systems, err := parseSystems(*systemsList, set.cfg.Systems)
	if err != nil {
		return set, m.flagUsage(fset, err.Error()), false
	}
	set.systems = systems
	given := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { given[f.Name] = true })
	set.addr = m.setting(given["addr"], *addr, "CUSTODY_ADDR", set.cfg.Addr, "127.0.0.1:8080")
	set.data = m.setting(given["data"], *data, "CUSTODY_DATA", set.cfg.Data, *data)
	set.contracts = m.setting(given["contracts"], *contracts, "CUSTODY_CONTRACTS", set.cfg.Contracts, "")
	set.store = m.setting(given["store"], *store, "CUSTODY_STORE", set.cfg.Store, "")
	set.nats = m.setting(given["nats"], *natsURL, "CUSTODY_NATS", "", "")
	set.room = m.setting(given["room"], *room, "CUSTODY_BRAIN_ROOM", "", "")
	set.llm = m.setting(given["llm"], *llmURL, "CUSTODY_LLM", "", "template")
	set.llmEdge = m.setting(given["llm-edge"], *edgeURL, "CUSTODY_LLM_EDGE", "", "")
	var fileCert, fileKey string
	if set.cfg.TLS != nil {
		fileCert, fileKey = set.cfg.TLS.Cert, set.cfg.TLS.Key
	}
	set.tlsCert = m.setting(given["tls-cert"], *tlsCert, "CUSTODY_TLS_CERT", fileCert, "")
	set.tlsKey = m.setting(given["tls-key"], *tlsKey, "CUSTODY_TLS_KEY", fileKey, "")
	if (set.tlsCert == "") != (set.tlsKey == "") {
		return set, m.flagUsage(fset, "--tls-cert and --tls-key go together: give both or neither"), false
	}
	set.witnesses = set.cfg.Witnesses
	set.mesh = config.Mesh{
		Roster:   m.setting(given["mesh-roster"], *meshRoster, "", set.cfg.Mesh.Roster, ""),
		Key:      m.setting(given["mesh-key"], *meshKey, "", set.cfg.Mesh.Key, ""),
		Subjects: m.setting(given["mesh-subjects"], *meshSubjects, "", set.cfg.Mesh.Subjects, ""),
		Consumer: m.setting(given["mesh-consumer"], *meshConsumer, "", set.cfg.Mesh.Consumer, ""),
	}
	list := []string(witnessFlag)
	if len(list) == 0 {
		list = strings.Fields(m.env("CUSTODY_WITNESSES", ""))
	}
	if len(list) > 0 {
		set.witnesses = nil
	}
	for _, s := range list {
		w, err := parseWitness(s)
		if err != nil {
			return set, m.flagUsage(fset, err.Error()), false
		}
		set.witnesses = append(set.witnesses, w)
	}
	return set, 0, true
}

// setting picks a flag given on the command line, else the environment,
// else the config file, else def.
func (m *Main) setting(given bool, flagValue, envName, fileValue, def string) string {
	switch {
	case given:
		return flagValue
	case m.env(envName, "") != "":
		return m.env(envName, "")
	case fileValue != "":
		return fileValue
	}
	return def
}

// parseSystems reads --systems, else the file's list, and refuses a name
// that no system this program is built with has.
func parseSystems(flagValue string, fromFile []string) ([]string, error) {
	list := fromFile
	if flagValue != "" {
		list = strings.Split(flagValue, ",")
	}
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if err := builtWith().Check(out); err != nil {
		return nil, err
	}
	return out, nil
}

// serve runs the server with set until ctx ends.
func (m *Main) serve(ctx context.Context, set serveSettings) error {
	tlsConfig, err := loadTLS(set.tlsCert, set.tlsKey)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", set.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", set.addr, err)
	}
	defer ln.Close()
	base := "http://" + ln.Addr().String()
	if tlsConfig != nil {
		base = "https://" + ln.Addr().String()
		ln = tls.NewListener(ln, tlsConfig)
	}
	limits := httpLimitsOf(set.cfg)
	sys, err := m.serveSystems(ctx, set)
	if err != nil {
		return fmt.Errorf("domain systems: %w", err)
	}
	auth, err := m.newServeAuth(set.cfg)
	if err != nil {
		return err
	}
	st, err := m.withFileEnv(set.cfg, base).withStore(set.store).openStackWith(ctx, stackConfig{
		data: set.data, contracts: set.contracts, file: set.cfg, tools: sys.Tools, requireAll: set.requireAll, groups: auth.groupsOf()})
	if err != nil {
		return err
	}
	st.auth = auth
	defer st.Close()
	defer m.checkChain(ctx, st)()
	defer m.markInterrupted(ctx, st)()
	st.console = cmp.Or(set.cfg.ConsoleURL, base)
	tokens, notes, err := m.serveTokens(set)
	if err != nil {
		return err
	}
	wit, err := m.serveWitnesses(st, set.witnesses)
	if err != nil {
		return err
	}
	lifetime, err := set.cfg.SessionLifetime()
	if err != nil {
		return err
	}
	door := &mcpDoor{}
	h, ws, err := m.followUpstreams(st, &sys, func(sys servedSystems) (http.Handler, *web.Server, error) {
		return m.serveHandler(ctx, st, tokens, sys, wit.status(), limits, lifetime, set.cfg.MCP, door)
	})
	if err != nil {
		return err
	}
	if note := loginNote(ctx, ws, base); note != "" {
		notes = append(notes, note)
	}
	if wit != nil {
		sys.Runners = append(sys.Runners, wit.runner)
	}
	m.announce(base, set.data, notes)
	srv := limits.server(h)
	// The server's own complaints (a failed TLS handshake, say) go where
	// serve's log goes.
	srv.ErrorLog = log.New(m.Stderr, "custody: http: ", log.LstdFlags)
	err = m.run(ctx, ln, srv, st, sys)
	wit.final()
	return err
}

// checkChain verifies the whole chain of st's store in the background
// (see package chaincheck), beside the first calls, and returns the func
// that stops the check and waits for it, to run before the store closes.
func (m *Main) checkChain(ctx context.Context, st *stack) (stop func()) {
	cs, ok := st.db.(chaincheck.Store)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	st.check = chaincheck.Start(ctx, cs, time.Now, slog.New(slog.NewTextHandler(m.Stderr, nil)))
	return func() {
		cancel()
		<-st.check.Done()
	}
}

// markInterrupted closes, in the background, the calls that no instance
// will end, and returns the func that stops it and waits for it, to run
// before the store closes. SQLite has one instance: once, at start, every
// call the previous run left without an outcome (see closeInterrupted).
// Instances sharing a PostgreSQL store run calls at the same time, each
// under a lease: at start, then whenever an instance's lease expires
// until serve stops, the calls of the instances that are gone (see
// closeOrphans).
func (m *Main) markInterrupted(ctx context.Context, st *stack) (wait func()) {
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	now := func() string { return custody.FormatTime(time.Now()) }
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	switch db := st.db.(type) {
	case *sqlite.DB:
		go func() {
			defer close(done)
			closed, err := closeInterrupted(ctx, db, now)
			logClosed(ctx, log, closed, err)
		}()
		return func() { <-done; cancel() }
	case sharedStore:
		go func() {
			defer close(done)
			watchOrphans(ctx, db, now, log)
		}()
		return func() { cancel(); <-done }
	}
	cancel()
	return func() {}
}

// serveWitnesses starts the witnessing of the store's checkpoints, when
// witnesses are configured: nil without any. Checkpoint notes are the
// SQLite store's; witnesses with another store are refused.
func (m *Main) serveWitnesses(st *stack, list []witnessConfig) (*witnessing, error) {
	if len(list) == 0 {
		return nil, nil
	}
	sq, ok := st.db.(*sqlite.DB)
	if !ok {
		return nil, custody.Errorf(custody.EINVALID, "witnesses cosign the SQLite store's checkpoint notes: this store has none")
	}
	return newWitnessing(sq, list, slog.New(slog.NewTextHandler(m.Stderr, nil)))
}

// withFileEnv returns a copy of m whose environment falls back to the
// config file: its webhooks become $CUSTODY_NOTIFY (their secrets
// $CUSTODY_NOTIFY_SECRETS), its escalateAt $CUSTODY_ESCALATE_AT and its
// console URL (or
// base) $CUSTODY_CONSOLE_URL, so the stack reads one source.
func (m *Main) withFileEnv(cfg *config.File, base string) *Main {
	fallback := map[string]string{"CUSTODY_CONSOLE_URL": base}
	if cfg.ConsoleURL != "" {
		fallback["CUSTODY_CONSOLE_URL"] = cfg.ConsoleURL
	}
	var hooks, secrets []string
	for _, w := range cfg.Webhooks {
		hooks = append(hooks, w.Name+"="+w.URL)
		if w.Secret != "" {
			secrets = append(secrets, w.Name+"="+w.Secret)
		}
	}
	fallback["CUSTODY_NOTIFY"] = strings.Join(hooks, ",")
	if cfg.EscalateAt != 0 {
		fallback["CUSTODY_ESCALATE_AT"] = strconv.FormatFloat(cfg.EscalateAt, 'g', -1, 64)
	}
	fallback["CUSTODY_NOTIFY_SECRETS"] = strings.Join(secrets, ",")
	c := *m
	c.Getenv = func(k string) string {
		if v := m.Getenv(k); v != "" {
			return v
		}
		return fallback[k]
	}
	return &c
}

// serveTokens gathers the tokens from the environment and the config file.
// With no operator or no agent token configured it uses one kept in the
// data directory, created on first start; notes say where they are.
func (m *Main) serveTokens(set serveSettings) (web.Tokens, []string, error) {
	tokens, err := web.ParseTokens(m.env("CUSTODY_AGENT_TOKENS", ""),
		m.env("CUSTODY_OPERATOR_TOKENS", ""), m.env("CUSTODY_AUDITOR_TOKENS", ""))
	if err != nil {
		return nil, nil, fmt.Errorf("tokens from the environment: %w", err)
	}
	if err := addFileTokens(tokens, set.cfg); err != nil {
		return nil, nil, err
	}
	var notes []string
	for _, gen := range []struct {
		role web.Role
		file string
	}{{web.RoleOperator, operatorTokenFile}, {web.RoleAgent, agentTokenFile}} {
		if hasRole(tokens, gen.role) {
			continue
		}
		note, err := kept(tokens, gen.role, filepath.Join(set.data, gen.file))
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, note)
	}
	return tokens, notes, nil
}

// addFileTokens adds the config file's id:token entries.
func addFileTokens(tokens web.Tokens, cfg *config.File) error {
	for _, l := range []struct {
		role web.Role
		list []string
	}{{web.RoleAgent, cfg.Tokens.Agent}, {web.RoleOperator, cfg.Tokens.Operator}, {web.RoleAuditor, cfg.Tokens.Auditor}} {
		for i, entry := range l.list {
			if err := tokens.Add(l.role, entry); err != nil {
				return fmt.Errorf("config tokens.%s[%d]: %w", l.role, i, err)
			}
		}
	}
	return nil
}

func hasRole(tokens web.Tokens, role web.Role) bool {
	for _, p := range tokens {
		if p.Role == role {
			return true
		}
	}
	return false
}

// kept adds the token kept in path for role (id = the role), creating it
// (mode 0600) on first use, and returns a note for the operator.
func kept(tokens web.Tokens, role web.Role, path string) (string, error) {
	token, created, err := keptToken(path)
	if err != nil {
		return "", err
	}
	if err := tokens.Add(role, string(role)+":"+token); err != nil {
		return "", fmt.Errorf("token in %s: %w", path, err)
	}
	if role == web.RoleOperator && created {
		return "operator token (Authorization: Bearer …, or the console's sign-in form), created: " + path, nil
	}
	return string(role) + " token (Authorization: Bearer …): " + path, nil
}

// keptToken reads the token in path, or creates a new one there.
func keptToken(path string) (token string, created bool, err error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		token = rand.Text()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, fmt.Errorf("create token file: %w", err)
		}
		_, err = f.WriteString(token + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", false, fmt.Errorf("write token file %s: %w", path, err)
		}
		return token, true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read token file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("token file %s is readable by others: chmod 600 it", path)
	}
	return strings.TrimSpace(string(raw)), false, nil
}

// loginNote returns a single-use console sign-in link for the operator
// whose token serve keeps in the data directory, or "" when the operators
// are configured: they sign in with their token, or ask for a link with
// it (POST /v1/console/login-link).
func loginNote(ctx context.Context, ws *web.Server, base string) string {
	path, expires, err := ws.LoginLink(ctx, string(web.RoleOperator))
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("no console sign-in link: %v; sign in with the operator token", err)
	}
	return fmt.Sprintf("console sign-in link (works once, until %s; POST %s/v1/console/login-link with the operator token makes another):\n  %s%s",
		expires.UTC().Format(time.TimeOnly)+" UTC", base, base, path)
}

// serveHandler builds the root handler, MCP at /mcp and everything else
// web, and returns the web server too.
// door is the MCP door built before, which serves on with the stack's new
// gateway (its sessions stay open) where it can; one is built where not.
func (m *Main) serveHandler(ctx context.Context, st *stack, tokens web.Tokens, sys servedSystems, witnesses func() []tlog.WitnessStatus, limits httpLimits, sessionLifetime time.Duration, mcpCfg config.MCP, door *mcpDoor) (http.Handler, *web.Server, error) {
	logger := slog.New(slog.NewTextHandler(m.Stderr, nil))
	metrics := st.callMetrics()
	var apps []web.App
	if sys.Apps != nil {
		var err error
		if apps, err = sys.Apps(st); err != nil {
			return nil, nil, fmt.Errorf("domain apps: %w", err)
		}
	}
	wcfg := webConfig(ctx, st, tokens, limits, sessionLifetime, metrics, logger)
	wcfg.Witnesses, wcfg.Apps = witnesses, apps
	ws, err := web.New(wcfg)
	if err != nil {
		return nil, nil, err
	}
	ms, err := door.build(st, func() (*mcpserver.Server, error) {
		return mcpserver.New(st.gateway(), st.reg, mcpOptions(mcpCfg, mcpserver.Options{Observe: metrics.ObserveCall, Inclusion: st.inclusion, Logger: logger, Relay: st.mcpRelay(),
			ConsoleURL: st.console, MaxApprovalWait: limits.wait, Challenge: st.auth.challenge(true)}))
	}, func(ms *mcpserver.Server) http.Handler {
		return web.LimitBodies(ms.HTTPHandler(st.auth.mcpAgent(tokens)), limits.maxBody)
	})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", ms)
	st.auth.mount(mux)
	mux.Handle("/", ws.Handler())
	return telemetry.Continue(mux), ws, nil
}

// webConfig is the configuration of the API and console on st: serve's,
// and the console of custody mcp --stdio (mcp_console.go).
func webConfig(ctx context.Context, st *stack, tokens web.Tokens, limits httpLimits, sessionLifetime time.Duration, metrics *web.Metrics, logger *slog.Logger) web.Config {
	wcfg := web.Config{
		Gateway: st.gw, Approvals: st.approvals, Ledger: st.db, Verify: st.db.Verify, Commits: st.db.Commits,
		Checkpoint: st.db.LatestCheckpoint, Tokens: tokens, Metrics: metrics, Logger: logger,
		ApprovalChanges: approvalChanges(ctx, st.db), Sessions: st.db, SessionLifetime: sessionLifetime, Schemas: st.reg,
		MaxBody: limits.maxBody, BodyTimeout: limits.read, EventWriteTimeout: limits.write, Upstreams: st.healthOfUpstreams(),
		MaxWait: limits.wait, Bearer: st.auth.webBearer(), Challenge: st.auth.challenge(false), IdP: st.auth.consoleIdP(),
		Connector: st.connector, ConnectRedirect: st.connectTo,
	}
	if st.check != nil {
		wcfg.Verification = st.check.Status
	}
	if sq, ok := st.db.(*sqlite.DB); ok {
		// Write health and Merkle proofs are the SQLite store's.
		wcfg.Health, wcfg.Proofs = sq.Health, sq
	}
	return wcfg
}

// announce prints where the server listens and how to get in.
func (m *Main) announce(base, data string, notes []string) {
	fmt.Fprintf(m.Stdout, "custody serving on %s\n", base)
	fmt.Fprintf(m.Stdout, "  console  %s/\n  api      %s/v1/\n  mcp      %s/mcp\n  data     %s\n", base, base, base, data)
	for _, n := range notes {
		fmt.Fprintln(m.Stdout, n)
	}
}

// run serves until ctx ends, with the approval expiry loop and the domain
// runners beside, then shuts down: requests in flight get a few seconds.
func (m *Main) run(ctx context.Context, ln net.Listener, srv *http.Server, st *stack, sys servedSystems) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { st.approvals.Run(ctx, expireEvery) })
	wg.Go(func() { st.followRepins(ctx, m.Stderr) })
	for _, r := range sys.Runners {
		wg.Go(func() {
			if err := r(ctx, st); err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(m.Stderr, "custody: runner stopped: %v\n", err)
			}
		})
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("serve: %w", err)
	}
	cancel()
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if serr := srv.Shutdown(shutdown); serr != nil {
		srv.Close()
	}
	wg.Wait()
	// A clean stop leaves every entry under a signed checkpoint, so that
	// an export verifies strictly; the store's Close seals only what this
	// process appended.
	if _, cerr := st.db.Checkpoint(context.Background()); cerr != nil && custody.ErrorKind(cerr) != custody.ENOTFOUND {
		fmt.Fprintf(m.Stderr, "custody: cannot seal the ledger at shutdown: %v\n", cerr)
	}
	fmt.Fprintln(m.Stdout, "custody stopped")
	return err
}
