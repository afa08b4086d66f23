package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/upstream"
)

// rulesFile is a configuration with one HTTP tool, "pay", governed by
// the policy members given.
func rulesFile(policy string) []byte {
	return []byte(`{
  "httpTools": {"pay": {"url": "http://127.0.0.1:1/pay",
    "input": {"type": "object", "properties": {"amount": {"type": "number"}, "path": {"type": "string"}}},
    "output": {"type": "object"}}},
  "tools": {"pay": {"access": "WRITE", "effect": "REVERSIBLE", ` + policy + `}}
}`)
}

func noEnv(string) string { return "" }

// TestConditionsLoad: conditions and rates reach the upstream policy
// with the path each was written at.
func TestConditionsLoad(t *testing.T) {
	f, err := config.Parse(rulesFile(`"approveWhen": "args.amount > 100 || !args.path.startsWith('notes/')",
    "denyWhen": ["now.getHours() < 6", "trace.refusals > 3"],
    "rate": [{"per": "agent", "calls": 20, "every": "1h"}, {"per": "global", "calls": 100, "every": "1m"}]`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Upstream().Governance["pay"]
	want := []custody.Condition{
		{When: custody.DenyWhen, Expr: "now.getHours() < 6", Source: "/tools/pay/denyWhen/0"},
		{When: custody.DenyWhen, Expr: "trace.refusals > 3", Source: "/tools/pay/denyWhen/1"},
		{When: custody.ApproveWhen, Expr: "args.amount > 100 || !args.path.startsWith('notes/')", Source: "/tools/pay/approveWhen"},
	}
	if len(p.Conditions) != len(want) {
		t.Fatalf("conditions = %+v, want %+v", p.Conditions, want)
	}
	for i := range want {
		if p.Conditions[i] != want[i] {
			t.Errorf("condition %d = %+v, want %+v", i, p.Conditions[i], want[i])
		}
	}
	if len(p.Rates) != 2 || p.Rates[0] != (custody.Rate{Per: custody.PerAgent, Calls: 20, Every: time.Hour, Pool: "pay"}) {
		t.Errorf("rates = %+v", p.Rates)
	}
}

// TestConditionsLoadErrors: what is wrong with a condition or a rate is
// an error naming its path, at load or, against the tool's input schema,
// when the upstreams are opened (as config check and serve do).
func TestConditionsLoadErrors(t *testing.T) {
	for _, tc := range []struct{ name, policy, want string }{
		{"ErrSyntax", `"denyWhen": "args.amount >"`, "/tools/pay/denyWhen: "},
		{"ErrNotBool", `"allowWhen": ["true", "args.amount + 1"]`, "/tools/pay/allowWhen/1: "},
		{"ErrUnknownVariable", `"approveWhen": "user == 'x'"`, "/tools/pay/approveWhen: "},
		{"ErrUnknownField", `"approveWhen": "args.amout > 100"`, "/tools/pay/approveWhen: 1:5: undefined field 'amout'"},
		{"ErrWrongType", `"approveWhen": "args.path > 100"`, "/tools/pay/approveWhen: "},
		{"ErrRatePer", `"rate": {"per": "user", "calls": 1, "every": "1h"}`, "/tools/pay/rate"},
		{"ErrRateEvery", `"rate": {"per": "agent", "calls": 1, "every": "1ms"}`, "/tools/pay/rate/0/every"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openRules(tc.policy)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// openRules loads a rules file and opens its upstreams' contracts.
func openRules(policy string) error {
	f, err := config.Parse(rulesFile(policy), noEnv)
	if err != nil {
		return err
	}
	set, err := upstream.Open(context.Background(), f.Upstream())
	if err != nil {
		return err
	}
	defer set.Close()
	_, err = set.Contracts()
	return err
}
