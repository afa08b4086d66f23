//go:build !unix

package pgtest

// serverRunner says that clusters are run on Unix only.
func serverRunner() (r runner, reason string) {
	return runner{}, "a PostgreSQL cluster of a test's own runs on Unix only"
}
