package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/chaincheck"
	"github.com/custody-dev/custody/telemetry"
	"github.com/custody-dev/custody/upstream"
	"github.com/custody-dev/custody/web"
)

// stack is the running core: the store, the contracts, the approval
// service and the gateway offering the example envelope, the upstream
// tools a configuration governs, and any tools a command adds.
type stack struct {
	// console is the operator console's base URL, where a held call is
	// decided; "" where none is served.
	console string
	// data is the data directory the stack was opened on.
	data      string
	db        dataStore
	reg       *contract.Registry
	approvals *approval.Service
	gw        *gate.Gateway
	// up is the configured upstreams; nil without any.
	up *upstream.Set
	// connector connects those of up that take a person's authorization,
	// redirected to connectTo (upstream_oauth.go); nil without any.
	connector web.Connector
	connectTo string
	// auth is the OAuth resource server serve answers with; nil without.
	auth *serveAuth
	// relay serves up's governed resources and prompts; nil when the
	// configuration governs none.
	relay *upstream.Relay
	// flushSpans exports the calls' spans still buffered; nil when
	// tracing is off.
	flushSpans func(context.Context) error
	// check is the full verification of the chain serve runs at start;
	// nil elsewhere.
	check *chaincheck.Check
	// checks are approval validators of actions the gateway does not run
	// (a domain system's), asked after the gateway, in order.
	checks []func(ctx context.Context, a custody.Approval) error
	// gen is what gw, reg and relay are built from again when a server
	// that was down comes up (follow.go); nil without upstreams.
	gen *generation
}

// stackConfig says what a stack is made of.
type stackConfig struct {
	data, contracts string
	// file is the configuration file; nil when none was given.
	file *config.File
	// tools are tools the command adds (a seed system's, the bench's).
	tools []gate.Tool
	// requireAll fails the start when an upstream cannot be reached
	// (--require-all-upstreams), as the file's requireAllUpstreams does.
	requireAll bool
	// groups are the groups of the agents the IdP's tokens named, for
	// the agents policy's group:NAME keys; nil without auth.
	groups func(actor string) []string
}

// configFlag adds --config to fs: the configuration file, $CUSTODY_CONFIG
// by default.
func (m *Main) configFlag(fs *flag.FlagSet) *string { return m.systemEnv().ConfigFlag(fs) }

// loadConfig reads the configuration at path; nil when path is empty.
func (m *Main) loadConfig(path string) (*config.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := config.Load(path, m.Getenv)
	if err != nil {
		return nil, &custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err}
	}
	m.configWarnings(path, f)
	return f, nil
}

// configWarnings prints, one line each on stderr, what the file at path
// holds that custody ignores.
func (m *Main) configWarnings(path string, f *config.File) {
	for _, w := range f.Warnings() {
		fmt.Fprintf(m.Stderr, "custody: warning: config %s: %s\n", path, w)
	}
}

// contractsFlag adds --contracts to fs: a directory of user contracts,
// $CUSTODY_CONTRACTS by default.
func (m *Main) contractsFlag(fs *flag.FlagSet) *string { return m.systemEnv().ContractsFlag(fs) }

// openStack opens the store (SQLite in dataDir, or the one
// $CUSTODY_STORE names: see openStore), loads the contracts (embedded,
// example, and contractsDir when set), builds the approval service and a
// gateway on the example envelope plus tools.
//
// Approvals notify through the webhooks listed in $CUSTODY_NOTIFY, in
// escalation order after the console inbox: "name=URL,name=URL" (for
// example "sms=https://sms.example/hook,pager=https://pager.example/hook").
// $CUSTODY_CONSOLE_URL is the console base URL the notifications link to.
func (m *Main) openStack(ctx context.Context, dataDir, contractsDir string, tools ...gate.Tool) (*stack, error) {
	return m.openStackWith(ctx, stackConfig{data: dataDir, contracts: contractsDir, tools: tools})
}

// openStackWith opens a stack as sc says. With a configuration that
// declares upstreams it connects to each first (a server that cannot be
// reached is kept down, its tools served when it comes up, unless
// sc.requireAll or the file says to stop the start), registers their
// tools' contracts, and pins their definitions on the ledger; the example
// envelope's tools are then not offered: a configuration with upstreams
// exposes only what it governs.
func (m *Main) openStackWith(ctx context.Context, sc stackConfig) (_ *stack, err error) {
	notifiers, err := m.notifiers()
	if err != nil {
		return nil, err
	}
	s := &stack{data: sc.data}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	extra := map[string][]byte{}
	name, raw := example.Contract()
	extra[name] = raw
	// The store first: it keeps the upstreams' OAuth tokens.
	if s.db, err = m.openStore(sc.data); err != nil {
		return nil, err
	}
	if sc.file != nil && hasUpstreams(sc.file) {
		tokens, err := upstreamTokens(sc.file, s.db)
		if err != nil {
			return nil, err
		}
		if s.up, extra, err = m.openUpstreams(ctx, sc.file, extra, sc.requireAll, tokens); err != nil {
			return nil, err
		}
		s.connector, s.connectTo = upstreamConnector(s.up, sc.file), connectRedirect(sc.file)
	}
	if s.reg, err = contract.Load(contract.Options{Contracts: seedContracts(), Dir: sc.contracts, Extra: extra}); err != nil {
		return nil, err
	}
	escalateAt, err := m.escalateAt()
	if err != nil {
		return nil, err
	}
	acfg := approval.Config{Store: s.db, Ledger: s.db, Notifiers: notifiers, Validate: s.checkApproval, EscalateAt: escalateAt,
		State: s.db, CheckGrant: s.checkGrant, Changes: approvalChanges(context.Background(), s.db)}
	if s.approvals, err = approval.New(acfg); err != nil {
		return nil, err
	}
	tools := slices.Clone(sc.tools)
	if s.up == nil {
		tools = append(example.Tools(s.db, nil), sc.tools...)
	}
	gcfg := gate.Config{Registry: s.reg, Ledger: s.db, Approvals: s.approvals, State: s.db, Logger: m.warnLogger()}
	if gcfg.Tracer, s.flushSpans, err = m.callTracer(ctx); err != nil {
		return nil, err
	}
	if sc.file != nil {
		gcfg.Allowed = sc.file.AllowedWith(sc.groups)
		gcfg.Groups = sc.groups
	}
	if s.up != nil {
		gcfg.Registry = s.reg
		s.gen = &generation{base: tools, gcfg: gcfg, contracts: sc.contracts, pins: upstream.NewPins(s.db, s.db, s.approvals)}
		if err := s.regenerate(ctx); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.gw, err = gate.New(gcfg, example.EnvelopeID, tools); err != nil {
		return nil, err
	}
	return s, nil
}

// configuredStack opens the stack a front door other than serve offers,
// on data, or when data is "" (no --data) as serve would: $CUSTODY_DATA,
// else the file's data directory, else ./custody-data. It offers
// the configuration at configPath (none when empty) with the seed systems
// it lists, so that `custody call` and `custody mcp --stdio` serve the
// same tools as serve does with the same file. No simulation runs.
func (m *Main) configuredStack(ctx context.Context, data, contracts, configPath string) (*stack, error) {
	f, err := m.loadConfig(configPath)
	if err != nil {
		return nil, err
	}
	return m.configuredStackOf(ctx, data, contracts, f)
}

// configuredStackOf is configuredStack of the configuration f, already
// loaded: nil for none.
func (m *Main) configuredStackOf(ctx context.Context, data, contracts string, f *config.File) (*stack, error) {
	set := serveSettings{llm: m.env("CUSTODY_LLM", "template"), llmEdge: m.env("CUSTODY_LLM_EDGE", ""), cfg: f}
	if f != nil {
		set.systems = f.Systems
		if contracts == "" {
			contracts = f.Contracts
		}
	}
	if data == "" {
		var fileData string
		if f != nil {
			fileData = f.Data
		}
		data = cmp.Or(m.env("CUSTODY_DATA", ""), fileData, "./custody-data")
	}
	sys, err := m.serveSystems(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("domain systems: %w", err)
	}
	st, err := m.openStackWith(ctx, stackConfig{data: data, contracts: contracts, file: f, tools: sys.Tools})
	if err != nil {
		return nil, err
	}
	if sys.Apps != nil {
		if _, err := sys.Apps(st); err != nil {
			st.Close()
			return nil, fmt.Errorf("domain systems: %w", err)
		}
	}
	return st, nil
}

// hasUpstreams reports whether f declares any upstream tool or governs
// any (a policy that governs nothing is refused, so it must be looked at).
func hasUpstreams(f *config.File) bool {
	return len(f.MCPServers) > 0 || len(f.HTTPTools) > 0 || len(f.Tools) > 0 || len(f.Resources) > 0 || len(f.Prompts) > 0
}

// openUpstreams connects to f's upstreams and adds their contracts to
// extra. With requireAll (or the file's requireAllUpstreams) a server
// that cannot be reached fails it. tokens keeps the OAuth tokens of the
// servers that need them (nil: in memory only).
func (m *Main) openUpstreams(ctx context.Context, f *config.File, extra map[string][]byte, requireAll bool, tokens *upstream.TokenVault) (*upstream.Set, map[string][]byte, error) {
	cfg := f.Upstream()
	cfg.RequireAll = cfg.RequireAll || requireAll
	cfg.Tokens = tokens
	cfg.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
	set, err := upstream.Open(ctx, cfg)
	if err != nil {
		return nil, nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: err.Error(), Err: err}
	}
	contracts, err := set.Contracts()
	if err != nil {
		set.Close()
		return nil, nil, &custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err}
	}
	maps.Copy(extra, contracts)
	return set, extra, nil
}

// warnLogger logs warnings and errors to stderr.
func (m *Main) warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// checkApproval is the approval service's validator: an action about to
// be approved is checked against the gateway that will run it, built
// after the service, or else against the domain system that will.
func (s *stack) checkApproval(ctx context.Context, a custody.Approval) error {
	err := fmt.Errorf("tool %q: the gateway is not built yet: %w", a.Tool, approval.ErrNoContract)
	if gw := s.gateway(); gw != nil {
		err = gw.CheckApproval(ctx, a)
	}
	for _, check := range s.checks {
		if !errors.Is(err, approval.ErrNoContract) {
			break
		}
		err = check(ctx, a)
	}
	return err
}

// Close stops the upstreams and closes the store.
func (s *stack) Close() error {
	var errs []error
	if s.flushSpans != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.flushSpans(ctx))
		cancel()
	}
	if s.up != nil {
		errs = append(errs, s.up.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

// callTracer returns the tracer that makes every gateway call a span,
// exported over OTLP/HTTP to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names, and the func that flushes
// it; with neither set tracing is off and both are nil.
func (m *Main) callTracer(ctx context.Context) (trace.Tracer, func(context.Context) error, error) {
	tp, flush, err := telemetry.NewProvider(ctx, "", m.Getenv)
	if err != nil || tp == nil {
		return nil, nil, err
	}
	return tp.Tracer(gateScope), flush, nil
}

// gateScope is the instrumentation scope of the calls' spans.
const gateScope = "github.com/custody-dev/custody/gate"

// notifiers reads $CUSTODY_NOTIFY and the signing secrets of its
// webhooks, $CUSTODY_NOTIFY_SECRETS: "name=whsec_...,name=whsec_...". A
// webhook without a secret sends unsigned notifications, and says so.
func (m *Main) notifiers() ([]approval.Notifier, error) {
	spec := m.env("CUSTODY_NOTIFY", "")
	if spec == "" {
		return nil, nil
	}
	keys, err := webhookKeys(m.env("CUSTODY_NOTIFY_SECRETS", ""))
	if err != nil {
		return nil, err
	}
	console := strings.TrimRight(m.env("CUSTODY_CONSOLE_URL", ""), "/")
	var out []approval.Notifier
	for _, item := range strings.Split(spec, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" || url == "" {
			return nil, errors.New(`CUSTODY_NOTIFY: want "name=URL,name=URL"`)
		}
		if keys[name] == nil {
			fmt.Fprintf(m.Stderr, "custody: webhook %s has no secret: its notifications are unsigned\n", name)
		}
		out = append(out, &approval.Webhook{Channel: name, URL: url, ConsoleURL: console, Key: keys[name]})
		delete(keys, name)
	}
	if len(keys) > 0 {
		return nil, fmt.Errorf("CUSTODY_NOTIFY_SECRETS: secrets for %s, which are no webhooks of CUSTODY_NOTIFY", strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
	}
	return out, nil
}

// escalateAt reads $CUSTODY_ESCALATE_AT: the share of a pending
// approval's lifetime after which it escalates; 0 (the default) unset.
func (m *Main) escalateAt() (float64, error) {
	v := m.env("CUSTODY_ESCALATE_AT", "")
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f < 1) {
		return 0, fmt.Errorf("CUSTODY_ESCALATE_AT: %q is not a share above 0 and below 1", v)
	}
	return f, nil
}

// webhookKeys parses "name=whsec_...,name=whsec_..." into keys by name.
func webhookKeys(spec string) (map[string][]byte, error) {
	keys := map[string][]byte{}
	if spec == "" {
		return keys, nil
	}
	for _, item := range strings.Split(spec, ",") {
		name, secret, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, errors.New(`CUSTODY_NOTIFY_SECRETS: want "name=whsec_...,name=whsec_..."`)
		}
		key, err := approval.ParseWebhookSecret(secret)
		if err != nil {
			return nil, fmt.Errorf("CUSTODY_NOTIFY_SECRETS: webhook %s: %w", name, err)
		}
		keys[name] = key
	}
	return keys, nil
}

// errorJSON is how a command prints a refusal: the same shape as the API.
type errorJSON struct {
	Error custody.ErrorDetail `json:"error"`
}

// flagUsage prints a flag problem and the usage of fs, and returns the
// usage exit code.
func (m *Main) flagUsage(fs *flag.FlagSet, msg string) int { return m.systemEnv().FlagUsage(fs, msg) }

// givenData is the --data of fs when the command line gives one, "" when
// it does not (configuredStack then picks, as serve does).
func givenData(fs *flag.FlagSet, data string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "data" })
	if given {
		return data
	}
	return ""
}
