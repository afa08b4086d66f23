package main

// commands lists every subcommand. Each lives in its own file.
func (m *Main) commands() map[string]command {
	return map[string]command{
		// one line per subcommand, kept sorted
		"approvals": {"list, approve, decline and expire approval requests", (*Main).runApprovals},
		"assure":    {"clinical action envelopes: lint, run a target, verify and retest evidence packs", (*Main).runAssure},
		"bench":     {"measure the gateway against the raw SQLite baseline", (*Main).runBench},
		"brain":     {"local knowledge room, context packets and the Brain over MCP", (*Main).runBrain},
		"call":      {"call a tool through the gateway and print the result", (*Main).runCall},
		"config":    {"print the configuration schema, check a file, scan its upstreams for a tools block", (*Main).runConfig},
		"contracts": {"list the contracts and their named schemas", (*Main).runContracts},
		"demo":      {"run a seed system end to end with a scripted operator (peas, mesh)", (*Main).runDemo},
		"ledger":    {"verify, export, show and append to the evidence ledger", (*Main).runLedger},
		"mcp":       {"serve MCP on stdin and stdout (--stdio)", (*Main).runMCP},
		"mesh":      {"wildfire mesh pods: forward node, aggregator, simulation", (*Main).runMesh},
		"peas":      {"pile-up early alert tools: detect a signature from sensor readings", (*Main).runPeas},
		"serve":     {"serve the HTTP API, MCP at /mcp and the operator console", (*Main).runServe},
		"store":     {"back a SQLite data directory up while serve runs, or copy it into PostgreSQL", (*Main).runStore},
		"validate":  {"validate JSON documents against a schema", (*Main).runValidate},
		"version":   {"print the version, the commit and the Go version of this binary", (*Main).runVersion},
	}
}
