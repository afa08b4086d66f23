// Command custody is the contract-enforcing gateway for tool-using AI
// agents: it serves the gateway, validates documents against contracts,
// verifies and exports the evidence ledger, and runs the seed systems.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	m := NewMain()
	code := m.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
