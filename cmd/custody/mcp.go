package main

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/web"
)

// runMCP serves MCP on stdin and stdout for a local agent:
//
//	custody mcp --stdio [--data DIR] [--contracts DIR] [--config FILE] [--console-addr HOST:PORT|off]
//	custody mcp --stdio --server URL [--token-file FILE]
//
// The first serves here, its calls recorded with the actor "mcp-stdio",
// and the operator console beside it on a loopback port of its own
// (mcp_console.go) until stdin closes; the second bridges the session to a running custody serve at URL as
// the agent whose token it is (bridge.go). Logs go to stderr: stdout
// carries the protocol only.
func (m *Main) runMCP(ctx context.Context, args []string) int {
	fs := m.flags("mcp", "--stdio [--data DIR] [--contracts DIR] [--config FILE] [--console-addr HOST:PORT|off] | --stdio --server URL [--token-file FILE]")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout (the only transport here; HTTP is at /mcp of custody serve)")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	configPath := m.configFlag(fs)
	server := fs.String("server", "", "bridge the session to the custody serve at `URL` (its base URL or its /mcp URL) instead of serving here")
	tokenFile := fs.String("token-file", "", "with --server: read the agent token from `FILE` (default: env CUSTODY_AGENT_TOKEN)")
	consoleAddr := fs.String("console-addr", defaultConsoleAddr, "serve the operator console, where held calls are decided, on `HOST:PORT` (loopback unless TLS is configured; off for none)")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if !*stdio || fs.NArg() > 0 {
		return m.flagUsage(fs, "--stdio is required")
	}
	if *server != "" || *tokenFile != "" {
		if *consoleAddr != defaultConsoleAddr {
			return m.flagUsage(fs, "--console-addr is for a session served here: with --server, held calls are decided on that server's console")
		}
		return m.runBridge(ctx, fs, *server, *tokenFile)
	}
	f, err := m.loadConfig(*configPath)
	if err != nil {
		return m.fail(err)
	}
	cfg := cmp.Or(f, &config.File{})
	console, err := m.listenConsole(*consoleAddr, cfg)
	if custody.ErrorKind(err) == custody.EINVALID {
		return m.flagUsage(fs, custody.ErrorMessage(err))
	} else if err != nil {
		return m.fail(err)
	}
	if console != nil {
		defer console.ln.Close()
	}
	st, err := m.configuredStackOf(ctx, givenData(fs, *data), *contracts, f)
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A held call says where to decide it: on this session's console, and
	// on the command line, on this data directory.
	opts := mcpserver.Options{Inclusion: st.inclusion, Logger: logger, Relay: st.mcpRelay(), DataDir: dataDirFlagValue(st.data)}
	if console != nil {
		metrics := st.callMetrics()
		stop, err := console.serve(m, st, cfg, metrics, logger)
		if err != nil {
			return m.fail(err)
		}
		defer stop()
		opts.ConsoleURL, opts.Observe = console.base, metrics.ObserveCall
	}
	srv, err := mcpserver.New(st.gateway(), st.reg, opts)
	if err != nil {
		return m.fail(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	following := make(chan struct{})
	go func() {
		defer close(following)
		st.followStdio(ctx, logger, srv)
	}()
	defer func() {
		cancel()
		<-following // before the stack closes
	}()
	if err := srv.ServeStdio(ctx, m.Stdin, m.Stdout); err != nil {
		return m.fail(err)
	}
	return exitOK
}

// mcpOptions adds the config file's settings of the MCP door to opts.
func mcpOptions(cfg config.MCP, opts mcpserver.Options) mcpserver.Options {
	opts.SessionIdleTimeout = cfg.IdleTimeout()
	opts.MaxSessionsPerAgent = cfg.MaxSessionsPerAgent
	opts.AllowedOrigins = cfg.AllowedOrigins
	return opts
}

// mcpAgent authenticates the MCP door's bearer tokens: agent tokens only,
// refused as /v1 refuses them (unknown: unauthorized; another role: denied).
func mcpAgent(tokens web.Tokens) func(token string) (string, error) {
	return func(token string) (string, error) {
		p, ok := tokens.Lookup(token)
		switch {
		case !ok:
			return "", custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
		case p.Role != web.RoleAgent:
			return "", custody.Errorf(custody.EDENIED, "the %s role may not use MCP: it is for agents", p.Role)
		}
		return p.ID, nil
	}
}

// nopWriteCloser lets an MCP transport close Stdout without closing it.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }

// dataDirFlagValue is data as a --data flag must name it from any
// directory (the user's terminal is not where their client launched
// custody): absolute.
func dataDirFlagValue(data string) string {
	if data == "" {
		return ""
	}
	if abs, err := filepath.Abs(data); err == nil {
		return abs
	}
	return data
}
