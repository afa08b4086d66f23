package main

import (
	"context"
	"log/slog"

	"github.com/custody-dev/custody/mcpserver"
)

// runMCP serves MCP on stdin and stdout for a local agent:
//
//	custody mcp --stdio [--data DIR] [--contracts DIR] [--config FILE]
//
// Calls are recorded with the actor "mcp-stdio". Logs go to stderr: stdout
// carries the protocol only.
func (m *Main) runMCP(ctx context.Context, args []string) int {
	fs := m.flags("mcp", "--stdio [--data DIR] [--contracts DIR] [--config FILE]")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout (the only transport here; HTTP is at /mcp of custody serve)")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	configPath := m.configFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if !*stdio || fs.NArg() > 0 {
		return m.flagUsage(fs, "--stdio is required")
	}
	st, err := m.configuredStack(ctx, *data, *contracts, *configPath)
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{Inclusion: st.inclusion, Logger: logger})
	if err != nil {
		return m.fail(err)
	}
	if err := srv.ServeStdio(ctx, m.Stdin, m.Stdout); err != nil {
		return m.fail(err)
	}
	return exitOK
}
