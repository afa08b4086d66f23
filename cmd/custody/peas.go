package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/peas"
)

// runPeas runs the pile-up early alert subcommands.
func (m *Main) runPeas(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] != "detect" {
		fmt.Fprintln(m.Stderr, "usage: custody peas detect --location ID --readings FILE|-")
		return exitUsage
	}
	return m.runPeasDetect(ctx, args[1:])
}

// runPeasDetect evaluates one sensor window with the deterministic detector
// and prints detect_pileup_signature's output, validated against the
// tool's input and output contracts.
func (m *Main) runPeasDetect(_ context.Context, args []string) int {
	fs := m.flags("peas detect", "--location ID --readings FILE|-")
	loc := fs.String("location", "", "corridor location `ID`, e.g. I-94:MM88-EB")
	file := fs.String("readings", "", "`FILE` holding a sensor_readings object; - for stdin")
	window := fs.Int("window", 300, "sensor window in `SECONDS`")
	load := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *loc == "" || *file == "" {
		fmt.Fprintln(m.Stderr, "custody peas detect: --location and --readings are required")
		return exitUsage
	}
	readings, err := m.readInput(*file)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody peas detect: %v\n", err)
		return exitUsage
	}
	reg, err := load()
	if err != nil {
		return m.loadFailed(err)
	}
	out, err := detectValidated(reg, peas.DetectInput{LocationID: *loc, SensorWindowS: *window, Readings: readings})
	if err != nil {
		return m.failViolations(err)
	}
	fmt.Fprintf(m.Stdout, "%s\n", out)
	return exitOK
}

// detectValidated runs the detector between the contract checks of its
// input and its output.
func detectValidated(reg peas.Validator, in peas.DetectInput) (json.RawMessage, error) {
	if !json.Valid(in.Readings) {
		return nil, custody.Errorf(custody.EINVALID, "the readings are not JSON")
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	if err := reg.Validate(peas.Ref(0, "input"), raw); err != nil {
		return nil, err
	}
	out, err := peas.Evaluate(in, uuid.NewString(), custody.FormatTime(time.Now()))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	doc := bytes.TrimSpace(buf.Bytes())
	if err := reg.Validate(peas.Ref(0, "output"), doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// failViolations prints a refusal with its violations.
func (m *Main) failViolations(err error) int {
	code := m.fail(err)
	for _, v := range custody.AsError(err).Violations {
		fmt.Fprintf(m.Stderr, "  %s: %s\n", orRoot(v.Instance), v.Message)
	}
	return code
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}
