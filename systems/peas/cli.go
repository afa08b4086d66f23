package peas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems"
)

// Commands returns custody peas and custody demo peas.
func (Plugin) Commands() []systems.Command {
	return []systems.Command{
		{Name: "peas", Summary: "pile-up early alert tools: detect a signature from sensor readings", Run: runPeas},
		{Name: "demo peas", Summary: "pile-up early alert: signature → brief → approval → sign → in-car warning", Run: runDemo},
	}
}

// runPeas runs the pile-up early alert subcommands.
func runPeas(ctx context.Context, env systems.Env, args []string) int {
	if len(args) == 0 || args[0] != "detect" {
		fmt.Fprintln(env.Stderr, "usage: custody peas detect --location ID --readings FILE|-")
		return systems.ExitUsage
	}
	return runDetect(ctx, env, args[1:])
}

// runDetect evaluates one sensor window with the deterministic detector
// and prints detect_pileup_signature's output, validated against the
// tool's input and output contracts.
func runDetect(_ context.Context, env systems.Env, args []string) int {
	fs := env.Flags("peas detect", "--location ID --readings FILE|-")
	loc := fs.String("location", "", "corridor location `ID`, e.g. I-94:MM88-EB")
	file := fs.String("readings", "", "`FILE` holding a sensor_readings object; - for stdin")
	window := fs.Int("window", 300, "sensor window in `SECONDS`")
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *loc == "" || *file == "" {
		fmt.Fprintln(env.Stderr, "custody peas detect: --location and --readings are required")
		return systems.ExitUsage
	}
	readings, err := env.ReadInput(*file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "custody peas detect: %v\n", err)
		return systems.ExitUsage
	}
	reg, err := env.Host.Registry(*contracts)
	if err != nil {
		return env.LoadFailed(err)
	}
	out, err := detectValidated(reg, DetectInput{LocationID: *loc, SensorWindowS: *window, Readings: readings})
	if err != nil {
		return env.FailViolations(err)
	}
	fmt.Fprintf(env.Stdout, "%s\n", out)
	return systems.ExitOK
}

// detectValidated runs the detector between the contract checks of its
// input and its output.
func detectValidated(reg Validator, in DetectInput) (json.RawMessage, error) {
	if !json.Valid(in.Readings) {
		return nil, custody.Errorf(custody.EINVALID, "the readings are not JSON")
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	if err := reg.Validate(Ref(0, "input"), raw); err != nil {
		return nil, err
	}
	out, err := Evaluate(in, uuid.NewString(), custody.FormatTime(time.Now()))
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
	if err := reg.Validate(Ref(0, "output"), doc); err != nil {
		return nil, err
	}
	return doc, nil
}
