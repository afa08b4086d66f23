// Package gatetest holds the fixtures that the front doors' end-to-end
// tests share: a contract and tools that exercise a budget, a breaching
// output and a write, a ledger that can be made to fail, and a settable
// clock.
package gatetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// ContractFile names Contract in contract.Options.Extra.
const ContractFile = "gatetest.json"

// Contract declares the schemas of the test tools.
const Contract = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://custody.dev/schemas/gatetest/v1",
  "$defs": {
    "in": {
      "type": "object", "additionalProperties": false, "required": ["n"],
      "properties": {"n": {"type": "integer"}, "at": {"type": "string", "format": "date-time"}}
    },
    "out": {
      "type": "object", "additionalProperties": false, "required": ["ok"],
      "properties": {"ok": {"type": "boolean"}}
    }
  }
}`

// Tools returns the test tools, counting their handlers' runs in runs:
// "once" (READ, one call per trace), "bad_output" (READ, an output that
// breaks its schema and carries the secret "s3cr3t") and "count_write"
// (WRITE).
func Tools(runs *atomic.Int64) []gate.Tool {
	spec := func(name string, access custody.Access, budget int) custody.ToolSpec {
		return custody.ToolSpec{
			Name: name, Description: "test tool " + name,
			Input: "https://custody.dev/schemas/gatetest/v1#/$defs/in", Output: "https://custody.dev/schemas/gatetest/v1#/$defs/out",
			Access: access, Effect: custody.EffectReversible, Approval: custody.NotRequired, MaxCallsPerTrace: budget,
		}
	}
	answer := func(out string) gate.Handler {
		return func(context.Context, custody.Call) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(out), nil
		}
	}
	return []gate.Tool{
		{Spec: spec("once", custody.Read, 1), Handler: answer(`{"ok":true}`)},
		{Spec: spec("bad_output", custody.Read, 0), Handler: answer(`{"ok":"yes","secret":"s3cr3t"}`)},
		{Spec: spec("count_write", custody.Write, 0), Handler: answer(`{"ok":true}`)},
	}
}

// FlakyLedger is a ledger whose appends fail while Down is set, and
// whose head cannot be read while HeadDown is set, as a store that has
// failed closed answers.
type FlakyLedger struct {
	custody.Ledger
	Down     atomic.Bool
	HeadDown atomic.Bool
}

// Head reads the wrapped ledger's head, or fails while HeadDown is set.
func (l *FlakyLedger) Head(ctx context.Context) (custody.Receipt, error) {
	if l.HeadDown.Load() {
		return custody.Receipt{}, errors.New("disk on fire")
	}
	return l.Ledger.Head(ctx)
}

// Append appends to the wrapped ledger, or fails while Down is set.
func (l *FlakyLedger) Append(ctx context.Context, e custody.Entry) (custody.Entry, error) {
	if l.Down.Load() {
		return custody.Entry{}, errors.New("disk on fire")
	}
	return l.Ledger.Append(ctx, e)
}

// Commit commits to the wrapped ledger, or fails while Down is set.
func (l *FlakyLedger) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	if l.Down.Load() {
		return custody.Entry{}, errors.New("disk on fire")
	}
	return l.Ledger.Commit(ctx, e, changes...)
}
