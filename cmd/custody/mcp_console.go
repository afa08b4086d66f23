package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/web"
)

// Values of custody mcp --stdio's --console-addr.
const (
	// defaultConsoleAddr is loopback, on a port the OS chooses.
	defaultConsoleAddr = "127.0.0.1:0"
	// consoleOff serves no console: held calls are decided on the CLI.
	consoleOff = "off"
)

// stdioConsole is the operator console custody mcp --stdio serves beside
// its session, on the same stack, so that a call held for approval can
// be decided in a browser as well as with custody approvals approve. It
// listens on a loopback port of its own unless TLS is configured.
type stdioConsole struct {
	ln   net.Listener
	base string
}

// listenConsole listens on addr for the console of custody mcp --stdio:
// nil for "off". An address that is not loopback is refused (EINVALID)
// unless f or the environment configure TLS, as for serve.
func (m *Main) listenConsole(addr string, f *config.File) (*stdioConsole, error) {
	if addr == consoleOff {
		return nil, nil
	}
	tlsConfig, err := m.consoleTLS(f)
	if err != nil {
		return nil, err
	}
	if err := checkConsoleAddr(addr, tlsConfig != nil); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: listen on %s: %w", addr, err)
	}
	if err := checkConsoleAddr(ln.Addr().String(), tlsConfig != nil); err != nil {
		// A name such as localhost may resolve elsewhere.
		ln.Close()
		return nil, err
	}
	c := &stdioConsole{ln: ln, base: "http://" + ln.Addr().String()}
	if tlsConfig != nil {
		c.ln, c.base = tls.NewListener(ln, tlsConfig), "https://"+ln.Addr().String()
	}
	return c, nil
}

// consoleTLS is the certificate the console answers HTTPS with, as serve
// reads it: $CUSTODY_TLS_CERT and $CUSTODY_TLS_KEY over the file's "tls";
// nil for none.
func (m *Main) consoleTLS(f *config.File) (*tls.Config, error) {
	var cert, key string
	if f.TLS != nil {
		cert, key = f.TLS.Cert, f.TLS.Key
	}
	cert, key = m.env("CUSTODY_TLS_CERT", cert), m.env("CUSTODY_TLS_KEY", key)
	if (cert == "") != (key == "") {
		return nil, custody.Errorf(custody.EINVALID, "the console's TLS certificate and key go together: give both or neither")
	}
	return loadTLS(cert, key)
}

// checkConsoleAddr refuses a console address that is not HOST:PORT, or
// whose host is not loopback when the console has no TLS: the console
// decides held calls, and plain HTTP should not leave the machine.
func checkConsoleAddr(addr string, hasTLS bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return custody.Errorf(custody.EINVALID, "--console-addr %q: want HOST:PORT (such as 127.0.0.1:0, any free port) or off", addr)
	}
	if hasTLS || isLoopback(host) {
		return nil
	}
	return custody.Errorf(custody.EINVALID, "--console-addr %s is not a loopback address: without TLS the console listens on 127.0.0.1, ::1 or localhost only (configure \"tls\" in the config file, or CUSTODY_TLS_CERT and CUSTODY_TLS_KEY, to listen elsewhere)", addr)
}

// isLoopback reports whether host names this machine's loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// serve serves the console on st until stop is called, after printing on
// m.Stderr (stdout is the MCP stream) where it is and the operator's
// sign-in link. stop shuts the console down and waits for it.
func (c *stdioConsole) serve(m *Main, st *stack, f *config.File, metrics *web.Metrics, logger *slog.Logger) (stop func(), err error) {
	tokens, notes, err := m.consoleTokens(st.data, f)
	if err != nil {
		return nil, err
	}
	lifetime, err := f.SessionLifetime()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	limits := httpLimitsOf(f)
	ws, err := web.New(webConfig(ctx, st, tokens, limits, lifetime, metrics, logger))
	if err != nil {
		cancel()
		return nil, err
	}
	if note := loginNote(ctx, ws, c.base); note != "" {
		notes = append(notes, note)
	}
	fmt.Fprintf(m.Stderr, "custody console on %s/ (decide this session's held calls there, or with custody approvals approve)\n", c.base)
	for _, n := range notes {
		fmt.Fprintln(m.Stderr, n)
	}
	srv := limits.server(ws.Handler())
	srv.ErrorLog = log.New(m.Stderr, "custody: console: ", log.LstdFlags)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(c.ln); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(m.Stderr, "custody: console stopped: %v\n", err)
		}
	}()
	return func() {
		cancel()
		shutdown, stopWait := context.WithTimeout(context.Background(), 5*time.Second)
		defer stopWait()
		if err := srv.Shutdown(shutdown); err != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// consoleTokens are the tokens the console of custody mcp --stdio admits:
// the operators and auditors serve admits (environment, config file),
// and with no operator configured the one serve keeps in data, so that
// either console signs the same operator in. The agent has its session
// on stdio: the console admits no agent, and so offers no second door
// to the tools. notes say where a kept token is.
func (m *Main) consoleTokens(data string, f *config.File) (web.Tokens, []string, error) {
	tokens, err := web.ParseTokens("", m.env("CUSTODY_OPERATOR_TOKENS", ""), m.env("CUSTODY_AUDITOR_TOKENS", ""))
	if err != nil {
		return nil, nil, fmt.Errorf("tokens from the environment: %w", err)
	}
	humans := &config.File{Tokens: config.Tokens{Operator: f.Tokens.Operator, Auditor: f.Tokens.Auditor}}
	if err := addFileTokens(tokens, humans); err != nil {
		return nil, nil, err
	}
	if hasRole(tokens, web.RoleOperator) {
		return tokens, nil, nil
	}
	note, err := kept(tokens, web.RoleOperator, filepath.Join(data, operatorTokenFile))
	if err != nil {
		return nil, nil, err
	}
	return tokens, []string{note}, nil
}
