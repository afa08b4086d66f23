package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custody-dev/custody/systems"
)

// coreCommands lists the core's subcommands. Each lives in its own file.
func coreCommands() map[string]command {
	return map[string]command{
		// one line per subcommand, kept sorted
		"approvals": {"list, approve, decline and expire approval requests", (*Main).runApprovals},
		"bench":     {"measure the gateway against the raw SQLite baseline", (*Main).runBench},
		"call":      {"call a tool through the gateway and print the result", (*Main).runCall},
		"config":    {"print the configuration schema, check a file, scan its upstreams for a tools block", (*Main).runConfig},
		"contracts": {"list the contracts and their named schemas", (*Main).runContracts},
		"grants":    {"list and revoke grants: an operator's approval of a bounded class of calls", (*Main).runGrants},
		"ledger":    {"verify, export, show and append to the evidence ledger", (*Main).runLedger},
		"mcp":       {"serve MCP on stdin and stdout (--stdio)", (*Main).runMCP},
		"policy":    {"replay the recorded calls under a new configuration: what would change", (*Main).runPolicy},
		"serve":     {"serve the HTTP API, MCP at /mcp and the operator console", (*Main).runServe},
		"store":     {"back a SQLite data directory up while serve runs, or copy it into PostgreSQL", (*Main).runStore},
		"validate":  {"validate JSON documents against a schema", (*Main).runValidate},
		"version":   {"print the version, the commit and the Go version of this binary", (*Main).runVersion},
	}
}

// commands lists every subcommand: the core's and those of the systems
// the program is built with.
func (m *Main) commands() (map[string]command, error) {
	return withSystems(coreCommands(), builtWith())
}

// withSystems returns the core's commands and every command of the
// systems of list: custody NAME runs a system's command NAME, and
// custody demo NAME its command "demo NAME". It refuses a name taken
// twice, and a system's name of more than one word that is no demo.
func withSystems(core map[string]command, list systems.List) (map[string]command, error) {
	cmds := maps.Clone(core)
	var demos []systems.Command
	taken := func(name string) bool {
		_, ok := cmds[name]
		return ok || name == "demo"
	}
	for _, s := range list {
		for _, c := range s.Commands() {
			demo, isDemo := strings.CutPrefix(c.Name, "demo ")
			switch {
			case isDemo && oneWord(demo) && !slices.ContainsFunc(demos, func(d systems.Command) bool { return d.Name == c.Name }):
				demos = append(demos, c)
			case !isDemo && oneWord(c.Name) && !taken(c.Name):
				cmds[c.Name] = systemCommand(c)
			default:
				return nil, fmt.Errorf("system %s: command %q: its name is taken or not one word", s.Name(), c.Name)
			}
		}
	}
	if len(demos) > 0 {
		if _, ok := cmds["demo"]; ok {
			return nil, fmt.Errorf("command \"demo\": its name is taken")
		}
		cmds["demo"] = demoCommand(demos)
	}
	return cmds, nil
}

// oneWord reports whether name is one word of a command line.
func oneWord(name string) bool { return name != "" && !strings.ContainsAny(name, " \t\n") }

// systemCommand runs a system's command in the program.
func systemCommand(c systems.Command) command {
	return command{c.Summary, func(m *Main, ctx context.Context, args []string) int {
		return c.Run(ctx, m.systemEnv(), args)
	}}
}
