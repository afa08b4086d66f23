package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// custody mcp --stdio --server URL bridges the stdio session of an MCP
// client (Claude Desktop, Cursor, VS Code, Claude Code launch their
// servers as stdio children) to the /mcp door of a running custody serve.
// It works on JSON-RPC messages, not on MCP: it reads of a message only
// what routes it (its id, its method, the name the standard headers
// carry) and passes its bytes on unchanged, both ways.

const (
	// bridgeErrorCode is the JSON-RPC error code of the answers the bridge
	// writes itself, for a request serve did not answer: a server error of
	// the implementation-defined range.
	bridgeErrorCode = -32000
	// drainTimeout bounds how long, once stdin ends, the requests still in
	// flight may take to be answered before the bridge lets them go.
	drainTimeout = 10 * time.Second
	// listenBackoff and maxListenBackoff bound the wait before the stream
	// of server messages is opened again after it dropped.
	listenBackoff    = 500 * time.Millisecond
	maxListenBackoff = 30 * time.Second

	sessionHeader  = "Mcp-Session-Id"
	versionHeader  = "Mcp-Protocol-Version"
	eventStream    = "text/event-stream"
	versionMetaKey = "io.modelcontextprotocol/protocolVersion"
	// standardHeadersVersion is the first protocol version whose requests
	// name their method (and tool, prompt or resource) in headers too.
	standardHeadersVersion = "2026-07-28"
)

// runBridge runs custody mcp --stdio --server URL: fs has been parsed.
func (m *Main) runBridge(ctx context.Context, fs *flag.FlagSet, server, tokenFile string) int {
	if server == "" {
		return m.flagUsage(fs, "--token-file is the agent token for --server URL, which is missing")
	}
	var local []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "config" || f.Name == "data" || f.Name == "contracts" {
			local = append(local, "--"+f.Name)
		}
	})
	if len(local) > 0 {
		return m.flagUsage(fs, fmt.Sprintf("--server bridges to a custody serve, which has its own configuration: drop %s, or drop --server to serve here", strings.Join(local, " and ")))
	}
	endpoint, err := mcpEndpoint(server)
	if err != nil {
		return m.flagUsage(fs, err.Error())
	}
	token, err := m.bridgeToken(tokenFile)
	if err != nil {
		return m.flagUsage(fs, err.Error())
	}
	b := &bridge{endpoint: endpoint, token: token, client: &http.Client{Transport: http.DefaultTransport},
		out: &lineWriter{w: m.Stdout}, log: &lineWriter{w: m.Stderr}}
	b.run(ctx, m.Stdin)
	return exitOK
}

// mcpEndpoint is the /mcp URL of the serve at server, which names either
// its base URL or its /mcp URL.
func mcpEndpoint(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--server %q is not the URL of a custody serve: give its base URL, such as http://127.0.0.1:8080, or its /mcp URL", server)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/mcp") {
		u.Path += "/mcp"
	}
	u.RawPath = ""
	return u.String(), nil
}

// bridgeToken is the agent token the bridge presents: the contents of
// tokenFile when given, else $CUSTODY_AGENT_TOKEN.
func (m *Main) bridgeToken(tokenFile string) (string, error) {
	if tokenFile == "" {
		if t := strings.TrimSpace(m.env("CUSTODY_AGENT_TOKEN", "")); t != "" {
			return t, nil
		}
		return "", errors.New("--server needs an agent token: set CUSTODY_AGENT_TOKEN, or give --token-file FILE " +
			"(custody serve keeps one in DATA/agent.token, made on its first start, unless CUSTODY_AGENT_TOKENS or the config file's tokens.agent name them)")
	}
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", fmt.Errorf("--token-file: %v", err)
	}
	t := strings.TrimSpace(string(raw))
	if t == "" || strings.ContainsAny(t, " \t\r\n") {
		return "", fmt.Errorf("--token-file %s does not hold one agent token on one line", tokenFile)
	}
	return t, nil
}

// bridge relays one stdio session to serve's /mcp. Requests go out at
// once, each on its own goroutine; initialize, notifications and
// responses go in the order they came, so that the session exists
// before it is used and a client's answers keep their order.
type bridge struct {
	endpoint string
	token    string
	client   *http.Client
	out, log *lineWriter

	mu        sync.Mutex
	session   string // the Mcp-Session-Id of the initialize response
	version   string // the protocolVersion of the initialize result
	listening string // the session whose stream of server messages is open
	// initialize and initialized are the client's messages that opened
	// the session, sent again to open a new one when serve ended it.
	initialize, initialized []byte

	reopening      sync.Mutex
	calls, streams sync.WaitGroup
}

// run relays in until it ends or ctx is done, then lets the requests in
// flight finish (for drainTimeout at most) and ends the session.
func (b *bridge) run(ctx context.Context, in io.Reader) {
	work, stop := context.WithCancel(ctx)
	defer stop()
	lines := make(chan []byte)
	go readLines(work, in, lines)
	for open := true; open; {
		select {
		case <-ctx.Done():
			open = false
		case raw, ok := <-lines:
			if open = ok; ok {
				b.dispatch(work, raw)
			}
		}
	}
	drained := make(chan struct{})
	go func() { b.calls.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
	case <-time.After(drainTimeout):
		b.log.printf("custody mcp: stdin ended with requests unanswered after %v: leaving them", drainTimeout)
	}
	stop()
	b.calls.Wait()
	b.streams.Wait()
	b.endSession(context.WithoutCancel(ctx))
}

// readLines sends each non-empty line of in to lines, and closes lines
// when in ends.
func readLines(ctx context.Context, in io.Reader, lines chan<- []byte) {
	defer close(lines)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if msg := bytes.TrimSpace(line); len(msg) > 0 {
			select {
			case lines <- msg:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// dispatch sends one message of the client's.
func (b *bridge) dispatch(ctx context.Context, raw []byte) {
	m := parseMessage(raw)
	switch {
	case m.isCall() && m.Method == "initialize":
		b.mu.Lock()
		b.initialize, b.initialized = raw, nil
		b.mu.Unlock()
		b.post(ctx, raw, m)
		b.listen(ctx)
	case m.Method == "notifications/initialized":
		b.mu.Lock()
		b.initialized = raw
		b.mu.Unlock()
		b.post(ctx, raw, m)
	case m.isCall() || m.unreadable:
		b.calls.Add(1)
		go func() {
			defer b.calls.Done()
			b.post(ctx, raw, m)
		}()
	default:
		b.post(ctx, raw, m)
	}
}

// post sends one message of the client's and relays what serve answers.
// A request serve leaves unanswered is answered with an error, so that
// the client never waits for nothing. A message on a session serve no
// longer knows is sent again on a new one.
func (b *bridge) post(ctx context.Context, raw []byte, m message) { b.send(ctx, raw, m, true) }

func (b *bridge) send(ctx context.Context, raw []byte, m message, mayReopen bool) {
	b.mu.Lock()
	session, version := b.session, b.version
	b.mu.Unlock()
	res, err := b.postRaw(ctx, raw, m, session, version)
	if err == nil && mayReopen && session != "" && res.StatusCode == http.StatusNotFound {
		rerr := b.reopen(ctx, session)
		if rerr == nil {
			res.Body.Close()
			b.send(ctx, raw, m, false)
			return
		}
		if ctx.Err() == nil {
			b.log.printf("custody mcp: serve at %s ended the session, and a new one could not be opened: %v", b.endpoint, rerr)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			b.log.printf("custody mcp: cannot reach custody serve at %s: %v (is custody serve running there?)", b.endpoint, err)
			b.answer(m, fmt.Sprintf("custody mcp cannot reach custody serve at %s: is custody serve running there? (%v)", b.endpoint, err))
		}
		return
	}
	defer res.Body.Close()
	if m.Method == "initialize" && m.isCall() && res.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.session = res.Header.Get(sessionHeader)
		b.mu.Unlock()
	}
	answered := b.relay(res, m)
	if !answered && ctx.Err() == nil {
		b.answer(m, fmt.Sprintf("custody serve at %s ended its answer before answering the request", b.endpoint))
	}
}

// postRaw POSTs raw, the message m, on session.
func (b *bridge) postRaw(ctx context.Context, raw []byte, m message, session, version string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.endpoint, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	b.headers(req.Header, m, session, version)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, "+eventStream)
	return b.client.Do(req)
}

// reopen opens a new session in place of ended, which serve no longer
// knows (it restarted, or closed the session when it idled past its
// mcp.sessionIdleTimeout), by sending the client's initialize and
// notifications/initialized again, and answering neither: the client's
// session goes on. It does nothing when another request already has.
func (b *bridge) reopen(ctx context.Context, ended string) error {
	b.reopening.Lock()
	defer b.reopening.Unlock()
	b.mu.Lock()
	current, initialize, initialized := b.session, b.initialize, b.initialized
	b.mu.Unlock()
	if current != ended {
		return nil
	}
	m := parseMessage(initialize)
	res, err := b.postRaw(ctx, initialize, m, "", "")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	session := res.Header.Get(sessionHeader)
	if res.StatusCode != http.StatusOK || session == "" {
		return fmt.Errorf("initialize: %s", res.Status)
	}
	var result message
	take := func(msg []byte) bool {
		if r := parseMessage(msg); r.isResponseTo(m) {
			result = r
			return true
		}
		return false
	}
	if mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mediaType == eventStream {
		readEvents(res.Body, nil, take)
	} else if body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20)); err == nil {
		take(bytes.TrimSpace(body))
	}
	if result.Result.ProtocolVersion == "" {
		return errors.New("initialize: serve sent no result")
	}
	if initialized != nil {
		if res, err := b.postRaw(ctx, initialized, parseMessage(initialized), session, result.Result.ProtocolVersion); err == nil {
			res.Body.Close()
		}
	}
	b.mu.Lock()
	b.session, b.version = session, result.Result.ProtocolVersion
	b.mu.Unlock()
	b.log.printf("custody mcp: serve at %s had ended the session (it restarted, or the session idled past its mcp.sessionIdleTimeout): a new one is open", b.endpoint)
	b.listen(ctx)
	return nil
}

// relay writes the messages of serve's answer to a POST of m and reports
// whether m needs no further answer.
func (b *bridge) relay(res *http.Response, m message) bool {
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		why := refusal(res)
		b.log.printf("custody mcp: custody serve at %s refused the agent token (%s). Set CUSTODY_AGENT_TOKEN, or --token-file, "+
			"to an agent token of that serve: the one in its DATA/agent.token, or one its CUSTODY_AGENT_TOKENS or config tokens.agent name", b.endpoint, why)
		b.answer(m, fmt.Sprintf("custody serve refused the agent token (%s): set CUSTODY_AGENT_TOKEN or --token-file to an agent token of that serve", why))
		return true
	case res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusNoContent:
		// Taken (a notification, a response), or a cancelled call, which
		// no answer follows.
		return true
	case res.StatusCode == http.StatusOK && mediaType == eventStream:
		return readEvents(res.Body, nil, func(msg []byte) bool { return b.deliver(msg, m) })
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	body = bytes.TrimSpace(body)
	switch r := parseMessage(body); {
	case !r.unreadable && r.isResponseTo(m):
		b.deliver(body, m)
		return true
	case !r.unreadable && res.StatusCode == http.StatusOK:
		b.deliver(body, m)
		return !m.isCall()
	}
	why := fmt.Sprintf("custody serve at %s answered %s", b.endpoint, res.Status)
	if len(body) > 0 {
		why += ": " + errorText(body)
	}
	if res.StatusCode == http.StatusNotFound && m.Method != "initialize" {
		why += " (the session ended, and a new one could not be opened: restart this MCP server in your client)"
	}
	b.log.printf("custody mcp: %s", why)
	b.answerError(m, body, why)
	return true
}

// deliver writes msg to the client and reports whether it answers m. The
// result of initialize gives the protocol version the session speaks.
func (b *bridge) deliver(msg []byte, m message) bool {
	r := parseMessage(msg)
	if m.Method == "initialize" && r.isResponseTo(m) && r.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.version = r.Result.ProtocolVersion
		b.mu.Unlock()
	}
	b.out.line(msg)
	return r.isResponseTo(m)
}

// headers sets what every request to /mcp carries: the token, the
// session and its protocol version (a message's own _meta version wins,
// as the SDK's client has it), and from the stateless protocol on, the
// method and name the server checks against the body.
func (b *bridge) headers(h http.Header, m message, session, version string) {
	h.Set("Authorization", "Bearer "+b.token)
	if v, _ := m.Params.Meta[versionMetaKey].(string); v != "" {
		version = v
	}
	if session != "" {
		h.Set(sessionHeader, session)
	}
	if version != "" {
		h.Set(versionHeader, version)
	}
	if version < standardHeadersVersion || m.Method == "" {
		return
	}
	h.Set("Mcp-Method", m.Method)
	switch m.Method {
	case "tools/call", "prompts/get":
		h.Set("Mcp-Name", m.Params.Name)
	case "resources/read":
		h.Set("Mcp-Name", m.Params.URI)
	}
}

// listen opens, once a session is open, the stream of the messages serve
// sends outside any request, and relays them until ctx is done: a stream
// that drops is opened again, after a wait that doubles while it fails.
func (b *bridge) listen(ctx context.Context) {
	b.mu.Lock()
	session, version := b.session, b.version
	start := session != "" && b.listening != session
	if start {
		b.listening = session
	}
	b.mu.Unlock()
	if !start {
		return
	}
	b.streams.Add(1)
	go func() {
		defer b.streams.Done()
		var lastID string
		wait, failing := listenBackoff, false
		for {
			status, err := b.stream(ctx, session, version, &lastID)
			b.mu.Lock()
			replaced := b.session != session
			b.mu.Unlock()
			switch {
			case ctx.Err() != nil || replaced:
				return
			case status == http.StatusMethodNotAllowed:
				return // serve offers no such stream
			case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
				b.log.printf("custody mcp: the stream of server messages from %s: %v; not opening it again", b.endpoint, err)
				return
			case status == http.StatusOK:
				wait, failing = listenBackoff, false
			case !failing:
				failing = true
				b.log.printf("custody mcp: the stream of server messages from %s: %v; opening it again", b.endpoint, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, maxListenBackoff)
		}
	}()
}

// stream relays one GET of the server's stream until it ends, and
// returns its status (0 when there was no answer) and why it ended.
func (b *bridge) stream(ctx context.Context, session, version string, lastID *string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.endpoint, nil)
	if err != nil {
		return 0, err
	}
	b.headers(req.Header, message{}, session, version)
	req.Header.Set("Accept", eventStream)
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	res, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); res.StatusCode != http.StatusOK || mediaType != eventStream {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return res.StatusCode, fmt.Errorf("%s: %s", res.Status, errorText(bytes.TrimSpace(body)))
	}
	readEvents(res.Body, lastID, func(msg []byte) bool {
		b.out.line(msg)
		return false
	})
	return res.StatusCode, errors.New("it ended")
}

// endSession ends the session at serve, as a client that leaves does.
func (b *bridge) endSession(ctx context.Context) {
	b.mu.Lock()
	session, version := b.session, b.version
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.endpoint, nil)
	if err != nil {
		return
	}
	b.headers(req.Header, message{}, session, version)
	if res, err := b.client.Do(req); err == nil {
		res.Body.Close()
	}
}

// answer answers the request m, when it is one, with an error saying why.
func (b *bridge) answer(m message, why string) { b.answerError(m, nil, why) }

// answerError answers the request m with serve's JSON-RPC error in body,
// when it has one (as a refusal of an unreadable message has, without
// the request's id), else with why.
func (b *bridge) answerError(m message, body []byte, why string) {
	if !m.isCall() {
		return
	}
	e := rpcError{Code: bridgeErrorCode, Message: why}
	var r struct {
		Error *rpcError `json:"error"`
	}
	if json.Unmarshal(body, &r) == nil && r.Error != nil && r.Error.Code != 0 {
		e = *r.Error
	}
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", m.ID, e})
	if err == nil {
		b.out.line(msg)
	}
}
