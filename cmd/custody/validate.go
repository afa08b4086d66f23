package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
)

// violationLine is one line of `custody validate` output.
type violationLine struct {
	File     string `json:"file"`
	Instance string `json:"instance"`
	Keyword  string `json:"keyword"`
	Message  string `json:"message"`
}

// runValidate validates each file (stdin when none) against --schema and
// prints every violation as a JSON line. It exits 0 when every document
// is valid, 1 when any is invalid, and 2 on a usage error, an unknown
// schema, a broken contract or an unreadable input.
func (m *Main) runValidate(ctx context.Context, args []string) int {
	fs := m.flags("validate", "--schema REF [FILE ...]")
	schema := fs.String("schema", "", "schema to validate against: a name or URI#pointer from 'custody contracts'")
	load := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *schema == "" {
		fmt.Fprintln(m.Stderr, "custody validate: --schema is required")
		fs.Usage()
		return exitUsage
	}
	reg, err := load()
	if err != nil {
		return m.loadFailed(err)
	}
	if _, err := reg.Resolve(*schema); err != nil {
		return m.fail(err)
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	return m.validateFiles(ctx, reg, *schema, files)
}

func (m *Main) validateFiles(ctx context.Context, reg *contract.Registry, schema string, files []string) int {
	code := exitOK
	enc := json.NewEncoder(m.Stdout)
	enc.SetEscapeHTML(false)
	for _, file := range files {
		if ctx.Err() != nil {
			return m.fail(custody.Errorf(custody.EUNAVAILABLE, "interrupted"))
		}
		raw, err := m.readInput(file)
		if err != nil {
			fmt.Fprintf(m.Stderr, "custody validate: %v\n", err)
			code = exitUsage
			continue
		}
		if c := m.report(enc, file, reg.Validate(schema, raw)); c > code {
			code = c
		}
	}
	return code
}

// report prints the violations of one document and returns its exit code.
func (m *Main) report(enc *json.Encoder, file string, err error) int {
	if err == nil {
		return exitOK
	}
	e := custody.AsError(err)
	if e.Kind != custody.EINVALID {
		return m.fail(err)
	}
	for _, v := range e.Violations {
		if err := enc.Encode(violationLine{File: file, Instance: v.Instance, Keyword: v.Keyword, Message: v.Message}); err != nil {
			fmt.Fprintf(m.Stderr, "custody validate: write: %v\n", err)
		}
	}
	return exitFailed
}

// readInput reads a document from a file, or from stdin for "-". It reads
// one byte past the registry's cap, so an oversized document is refused
// by the registry without being read whole.
func (m *Main) readInput(file string) ([]byte, error) { return m.systemEnv().ReadInput(file) }

// loadFailed reports contracts that cannot be loaded: a configuration
// problem, so the exit code is the usage code.
func (m *Main) loadFailed(err error) int { return m.systemEnv().LoadFailed(err) }
