package main

// commands lists every subcommand. Each lives in its own file.
func (m *Main) commands() map[string]command {
	return map[string]command{
		// one line per subcommand, kept sorted
	}
}
