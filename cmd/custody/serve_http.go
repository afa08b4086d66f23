package main

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/web"
)

// Defaults of the HTTP server's limits (the config file's "http").
const (
	defaultReadHeaderTimeout = 5 * time.Second
	defaultWriteTimeout      = 60 * time.Second
	defaultIdleTimeout       = 120 * time.Second
	// writeMargin is what the default write timeout leaves, beyond the
	// longest tool timeout, for the rest of a call and its answer.
	writeMargin = 10 * time.Second
)

// httpLimits bound what a client may hold of the server: the time to send
// a header and a body, to take an answer, to keep a connection idle, and
// the size of a body.
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	maxBody                       int64
	// wait is how long a held call may wait for its decision (maxWait).
	wait time.Duration
}

// httpLimitsOf returns the file's limits, with defaults for those it
// leaves out. The default write timeout outlasts every tool's timeout.
func httpLimitsOf(f *config.File) httpLimits {
	t := f.HTTP.Timeouts()
	l := httpLimits{
		readHeader: cmp.Or(t.ReadHeader, defaultReadHeaderTimeout),
		read:       cmp.Or(t.Read, web.DefaultBodyTimeout),
		write:      cmp.Or(t.Write, max(defaultWriteTimeout, f.LongestToolTimeout()+writeMargin, f.LongestHeldCall()+writeMargin)),
		idle:       cmp.Or(t.Idle, defaultIdleTimeout),
		maxBody:    cmp.Or(f.HTTP.MaxBodyBytes, web.DefaultMaxBody),
	}
	l.wait = l.maxWait(f)
	return l
}

// minWait is the least a held call may wait, however tight the write
// timeout.
const minWait = time.Second

// maxWait is how long a held call may wait for its decision on either
// door (a tool's approvalWait on /mcp, Prefer: wait on /v1/calls): what
// the write timeout leaves once the longest run (a tool's timeout, else
// the gateway's deadline) and the margin for the answer are taken off,
// so that an approved call still runs and answers before the server cuts
// the connection.
func (l httpLimits) maxWait(f *config.File) time.Duration {
	run := max(gate.DefaultDeadline, f.LongestToolTimeout())
	return max(minWait, l.write-run-writeMargin)
}

// server returns the HTTP server of h. Its ReadTimeout bounds a whole
// request, header and body, on every path (/mcp too); the API bounds
// each body on its own as well, to answer 408 in its error shape. The
// event stream outlives WriteTimeout by extending its own deadline.
func (l httpLimits) server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.readHeader + l.read,
		WriteTimeout: l.write, IdleTimeout: l.idle}
}

// loadTLS loads the certificate and key serve answers HTTPS with: nil
// when neither is given.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"}}, nil
}
