package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/custody-dev/custody/internal/mcptest"
)

// TestMain lets the test binary stand in for an upstream MCP server: run
// with mcptest.EnvServe=1 it serves the mcptest tools on stdio.
func TestMain(m *testing.M) {
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
