package main

import (
	"context"
	"strings"
	"testing"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
)

// namedSystem is a system that brings only commands.
type namedSystem struct {
	name  string
	names []string
}

func (s namedSystem) Name() string               { return s.name }
func (namedSystem) Contracts() []contract.Source { return nil }
func (namedSystem) Serve(context.Context, systems.Settings) (systems.Served, error) {
	return systems.Served{}, nil
}

func (s namedSystem) Commands() []systems.Command {
	var out []systems.Command
	for _, n := range s.names {
		out = append(out, systems.Command{Name: n, Summary: n, Run: func(context.Context, systems.Env, []string) int { return exitOK }})
	}
	return out
}

// TestCommandsOfTheSystems: the program's commands are the core's and
// every system's, each demo under custody demo.
func TestCommandsOfTheSystems(t *testing.T) {
	cmds, err := (&Main{}).commands()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range builtWith() {
		for _, c := range s.Commands() {
			name, demo := strings.CutPrefix(c.Name, "demo ")
			switch {
			case demo && !strings.Contains(cmds["demo"].summary, name):
				t.Errorf("custody demo does not name %s's demo %s: %q", s.Name(), name, cmds["demo"].summary)
			case !demo && cmds[c.Name].summary != c.Summary:
				t.Errorf("custody %s: summary %q, want %s's %q", c.Name, cmds[c.Name].summary, s.Name(), c.Summary)
			}
		}
	}
	for name := range coreCommands() {
		if _, ok := cmds[name]; !ok {
			t.Errorf("core command %s is missing", name)
		}
	}
}

// TestCommandsRefuseOneNameTwice: a name is the core's or one system's,
// never two commands'.
func TestCommandsRefuseOneNameTwice(t *testing.T) {
	tests := []struct {
		name string
		list systems.List
		ok   bool
	}{
		{"OK", systems.List{namedSystem{"a", []string{"alpha", "demo a"}}, namedSystem{"b", []string{"beta", "demo b"}}}, true},
		{"ErrCoreName", systems.List{namedSystem{"a", []string{"ledger"}}}, false},
		{"ErrTwoSystems", systems.List{namedSystem{"a", []string{"alpha"}}, namedSystem{"b", []string{"alpha"}}}, false},
		{"ErrOneSystemTwice", systems.List{namedSystem{"a", []string{"alpha", "alpha"}}}, false},
		{"ErrTwoDemos", systems.List{namedSystem{"a", []string{"demo x"}}, namedSystem{"b", []string{"demo x"}}}, false},
		{"ErrDemoItself", systems.List{namedSystem{"a", []string{"demo"}}}, false},
		{"ErrTwoWords", systems.List{namedSystem{"a", []string{"alpha beta"}}}, false},
		{"ErrEmpty", systems.List{namedSystem{"a", []string{""}}}, false},
		{"ErrEmptyDemo", systems.List{namedSystem{"a", []string{"demo "}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := withSystems(coreCommands(), tt.list)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestDemoUsage: custody demo without a known demo lists every demo, in
// the order of the systems.
func TestDemoUsage(t *testing.T) {
	code, _, errs := runMain(t, nil, "", "demo", "nope")
	want := "usage: custody demo peas|mesh [flags]\n" +
		"  peas  pile-up early alert: signature → brief → approval → sign → in-car warning\n" +
		"  mesh  wildfire mesh: ridge-fire on 12 nodes → aggregation → approved broadcast\n"
	if code != exitUsage || errs != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errs, exitUsage, want)
	}
}
