package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/custody-dev/custody"
)

// runCall runs one tool call through the gateway:
//
//	custody call --tool T --args FILE|- [--trace ID] [--data DIR] [--config FILE]
//
// It prints {trace_id, output, receipt}; a refusal prints
// {"error":{kind, message, violations, approval_request_id, ...}} and exits
// with the kind's code (3 while an approval is pending).
func (m *Main) runCall(ctx context.Context, args []string) int {
	fs := m.flags("call", "--tool NAME --args FILE|- [--trace ID] [--data DIR] [--config FILE]")
	tool := fs.String("tool", "", "`NAME` of the tool to call")
	argsFile := fs.String("args", "", "`FILE` holding the JSON arguments, - for stdin")
	trace := fs.String("trace", "", "trace `ID` to continue; a new one when empty")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	configPath := m.configFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *tool == "" || *argsFile == "" || fs.NArg() > 0 {
		return m.flagUsage(fs, "--tool and --args are required")
	}
	raw, err := m.readArgs(*argsFile)
	if err != nil {
		return m.flagUsage(fs, fmt.Sprintf("read arguments: %v", err))
	}
	s, err := m.configuredStack(ctx, givenData(fs, *data), *contracts, *configPath)
	if err != nil {
		return m.fail(err)
	}
	defer s.Close()
	res, err := s.gw.Call(ctx, custody.Call{Trace: *trace, Tool: *tool, Args: raw, Actor: "cli", Via: "cli"})
	if err != nil {
		return m.printError(err)
	}
	return m.printJSON(res)
}

// readArgs reads the exact argument bytes from a file or stdin.
func (m *Main) readArgs(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(m.Stdin)
	}
	return os.ReadFile(name)
}

// printError prints err as the error JSON and returns its exit code.
func (m *Main) printError(err error) int {
	e := custody.AsError(err)
	if e.Kind == custody.EINTERNAL && e.Err != nil {
		fmt.Fprintf(m.Stderr, "custody: internal error: %v\n", e.Err)
	}
	m.printJSON(errorJSON{Error: custody.DetailOf(err)})
	return exitCode(e.Kind)
}

// printJSON prints v as one line of JSON.
func (m *Main) printJSON(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return m.fail(fmt.Errorf("encode output: %w", err))
	}
	fmt.Fprintf(m.Stdout, "%s\n", b)
	return exitOK
}
