package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BinDir is where Cluster looks for initdb, pg_ctl and postgres.
const BinDir = "/usr/lib/postgresql/15/bin"

// Stop modes of pg_ctl: Fast disconnects the clients and shuts down
// cleanly; Immediate kills the server as a crash would, and the next
// start recovers from the log.
const (
	Fast      = "fast"
	Immediate = "immediate"
)

// serverTimeout bounds each start or stop of a Cluster.
const serverTimeout = 30 * time.Second

// Cluster is a PostgreSQL server of one test's own, in a directory of its
// own on a free loopback port, for tests that stop and start the server
// under a store: the machine's shared server, which other tests use at
// the same time, must never be. Its methods fail the test on error.
type Cluster struct {
	// URL is the cluster's postgres database (trust auth, no TLS).
	URL string

	t    testing.TB
	dir  string // the server user's: data/, the sockets, the log
	port int
	run  runner

	mu      sync.Mutex
	running bool
}

// NewCluster creates and starts a cluster for t, and stops and removes it
// when t ends. It skips t when $CUSTODY_TEST_POSTGRES_URL is unset (no
// PostgreSQL tests are wanted), when the server's programs are not in
// BinDir, or when, as root, it cannot run them as the postgres user
// (initdb and postgres refuse root).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	Require(t)
	for _, p := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(BinDir, p)); err != nil {
			t.Skipf("no PostgreSQL server programs to run a cluster with: %v", err)
		}
	}
	run, reason := serverRunner()
	if reason != "" {
		t.Skip(reason)
	}
	if err := run.probe(); err != nil {
		t.Skipf("cannot run PostgreSQL's programs as %s: %v", run.user, err)
	}
	c := &Cluster{t: t, run: run}
	c.setUp()
	c.Start()
	return c
}

// setUp makes the directory, the database cluster and its configuration.
func (c *Cluster) setUp() {
	t := c.t
	t.Helper()
	dir, err := os.MkdirTemp("", "custody-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(c.cleanUp)
	if err := c.run.own(dir); err != nil {
		t.Fatalf("give %s to %s: %v", dir, c.run.user, err)
	}
	if out, err := c.pg("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.port = freePort(t)
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
		"max_connections = 40\nshared_buffers = 16MB\n", c.port, dir)
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = closeWith(f, err)
	}
	if err != nil {
		t.Fatalf("configure the cluster: %v", err)
	}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func closeWith(f *os.File, err error) error {
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Start starts the server and returns once it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	out, err := c.pg("pg_ctl", "start", "-D", c.data(), "-l", c.logFile(), "-w", "-t", fmt.Sprint(int(serverTimeout.Seconds())))
	if err != nil {
		c.t.Fatalf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.log())
	}
	c.running = true
}

// Stop stops the server in mode (Fast or Immediate) and returns once it
// has exited.
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, err := c.stop(mode); err != nil {
		c.t.Fatalf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
}

func (c *Cluster) stop(mode string) ([]byte, error) {
	out, err := c.pg("pg_ctl", "stop", "-D", c.data(), "-m", mode, "-w", "-t", fmt.Sprint(int(serverTimeout.Seconds())))
	if err == nil {
		c.running = false
	}
	return out, err
}

// cleanUp stops a running server and removes the directory.
func (c *Cluster) cleanUp() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		if out, err := c.stop(Immediate); err != nil {
			c.t.Errorf("stop the cluster: %v\n%s", err, out)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		c.t.Errorf("remove the cluster: %v", err)
	}
}

// pg runs one of the server's programs as the server's user, bounded in
// time, and returns its output.
func (c *Cluster) pg(prog string, args ...string) ([]byte, error) {
	cmd := c.run.command(filepath.Join(BinDir, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	cmd.WaitDelay = time.Second // the server it starts keeps no pipe of ours
	timer := time.AfterFunc(serverTimeout+10*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	return cmd.CombinedOutput()
}

func (c *Cluster) data() string    { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "log") }

// log returns the server's log, for failures.
func (c *Cluster) log() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runner runs programs as the user the server runs as.
type runner struct {
	user    string
	command func(name string, args ...string) *exec.Cmd
	// own gives a directory to the user.
	own func(dir string) error
}

// probe checks that the runner can run the server's programs.
func (r runner) probe() error {
	cmd := r.command(filepath.Join(BinDir, "pg_ctl"), "--version")
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
