package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/custody-dev/custody/internal/mcptest"
)

// envRunMain makes the test binary run custody's main with its
// arguments, as the custody binary would.
const envRunMain = "CUSTODY_TEST_RUN_MAIN"

// TestMain lets the test binary stand in for an upstream MCP server: run
// with mcptest.EnvServe=1 it serves the mcptest tools on stdio. Run with
// envRunMain=1 it is the custody binary (the bench runs custody serve and
// its upstream server as its own executable).
func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := NewMain().Run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	if os.Getenv(mcptest.EnvServe) == "1" {
		opts := mcptest.Options{Description: os.Getenv(mcptest.EnvDescription), WriteFile: os.Getenv(mcptest.EnvWriteFile)}
		if err := mcptest.ServeStdio(context.Background(), opts, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
