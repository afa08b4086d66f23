package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport runs a server's command and speaks newline-delimited
// JSON-RPC with it over its stdin and stdout, as mcp.CommandTransport
// does, and ends it as that does: stdin closed, then SIGTERM, then
// SIGKILL, terminate apart.
//
// Why not the SDK's: its connection (v1.8) decodes each message with
// fresh JSON decoders that allocate a 32 KiB buffer apiece, three for a
// request and two for a response, which was 61% of what a governed call
// on a stdio server allocated (bench upstream --door mcp, 2026-12-02).
// This one frames messages exactly as the SDK's does (the code below
// follows mcp/transport.go's ioConn) and decodes them with the SDK's own
// JSON library and flags (decodeMessage). One difference: a batch's
// notifications are not waited for as if they were requests to answer
// (the SDK's never sends the responses of such a batch); custody offers
// servers only revisions without batches. TestStdioConnMatchesSDK holds
// the messages it reads to the SDK's on the same streams, and
// FuzzDecodeMessage its decoding to jsonrpc.DecodeMessage.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
}

var _ mcp.Transport = (*stdioTransport)(nil)

// Connect implements mcp.Transport: it starts the command.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	return newStdioConn(stdout, &process{cmd: t.cmd, stdin: stdin, terminate: t.terminate}), nil
}

// process is a started command's stdin and its end.
type process struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close closes the server's stdin and waits for it to exit, signalling
// it to terminate after p.terminate and killing it after as long again.
func (p *process) Close() error {
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(p.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// stdioConn is a newline-delimited JSON-RPC connection with a server.
type stdioConn struct {
	out      io.WriteCloser
	incoming <-chan framed
	closed   chan struct{}

	writeMu sync.Mutex
	// queue holds the rest of the last batch read; Read is not called
	// concurrently.
	queue []jsonrpc.Message

	mu      sync.Mutex
	version string // the session's protocol revision, once known
	batches map[jsonrpc.ID]*batch

	closeOnce sync.Once
	closeErr  error
}

// framed is one JSON value read off the stream, or why none could be.
type framed struct {
	msg json.RawMessage
	err error
}

// batch tracks the server's requests that came in one batch, whose
// responses go back in one.
type batch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// newStdioConn reads JSON values off in on a goroutine of its own, as the
// SDK's connection does, so that Close unblocks a Read waiting for one.
func newStdioConn(in io.Reader, out io.WriteCloser) *stdioConn {
	incoming, closed := make(chan framed), make(chan struct{})
	go readFrames(in, maxMessageBytes, incoming, closed)
	return &stdioConn{out: out, incoming: incoming, closed: closed}
}

// readFrames sends each JSON value of in, at most limit bytes, to
// incoming until an error, which it sends too, or closed.
func readFrames(in io.Reader, limit int, incoming chan<- framed, closed <-chan struct{}) {
	limiter := &frameLimit{r: in, limit: limit}
	dec := json.NewDecoder(limiter)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			// What follows a value on its line must be the line's end.
			var next [1]byte
			if n, readErr := dec.Buffered().Read(next[:]); n > 0 {
				if next[0] != '\n' && next[0] != '\r' {
					err = errors.New("invalid trailing data at the end of stream")
				}
			} else if readErr != nil && readErr != io.EOF {
				err = readErr
			}
		}
		select {
		case incoming <- framed{msg: raw, err: err}:
		case <-closed:
			return
		}
		if err != nil {
			return
		}
		limiter.count = 0
	}
}

// errFrameTooLarge: one value was longer than the limit.
var errFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

// frameLimit bounds the bytes read for one value.
type frameLimit struct {
	r            io.Reader
	limit, count int
}

func (r *frameLimit) Read(p []byte) (int, error) {
	if r.count >= r.limit {
		return 0, errFrameTooLarge
	}
	if len(p) > r.limit-r.count {
		p = p[:r.limit-r.count]
	}
	n, err := r.r.Read(p)
	r.count += n
	return n, err
}

// SessionID implements mcp.Connection: a stdio session has none.
func (c *stdioConn) SessionID() string { return "" }

// setVersion tells the connection the session's protocol revision: from
// 2025-06-18 on, a batch is refused.
func (c *stdioConn) setVersion(v string) {
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
}

// batchesFrom is the first revision without JSON-RPC batching.
const batchesFrom = "2025-06-18"

// Read implements mcp.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		return next, nil
	}
	var raw json.RawMessage
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		if v.err != nil {
			return nil, v.err
		}
		raw = v.msg
	case <-c.closed:
		return nil, io.EOF
	}
	msgs, isBatch, err := decodeBatch(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if isBatch && version >= batchesFrom {
		return nil, fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", batchesFrom, version)
	}
	c.queue = msgs[1:]
	if isBatch {
		if err := c.track(msgs); err != nil {
			return nil, err
		}
	}
	return msgs[0], nil
}

// track records the requests of a batch, to answer them in one.
func (c *stdioConn) track(msgs []jsonrpc.Message) error {
	var b *batch
	for _, msg := range msgs {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		if b == nil {
			b = &batch{unresolved: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.unresolved[req.ID]; dup {
			return fmt.Errorf("duplicate message ID %q", req.ID)
		}
		b.unresolved[req.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if b == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range b.unresolved {
		if _, seen := c.batches[id]; seen {
			return fmt.Errorf("%w: batch contains previously seen request %v", jsonrpc2InvalidRequest, id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*batch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// jsonrpc2InvalidRequest is the JSON-RPC error of an invalid request.
var jsonrpc2InvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// answered records resp when it answers a request of a batch; it returns
// the batch's responses once resp completes it, and whether resp
// belonged to one.
func (c *stdioConn) answered(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) == 0 {
		return b.responses, true
	}
	return nil, true
}

// Write implements mcp.Connection: one message a line, or a batch's
// responses together once all are written.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var data []byte
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if all, inBatch := c.answered(resp); inBatch {
			if all == nil {
				return nil
			}
			if data, err = encodeBatch(all); err != nil {
				return err
			}
		}
	}
	if data == nil {
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("marshaling message: %v", err)
		}
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

// encodeBatch encodes responses as one JSON array.
func encodeBatch(responses []*jsonrpc.Response) ([]byte, error) {
	raws := make([]json.RawMessage, 0, len(responses))
	for _, r := range responses {
		raw, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return nil, fmt.Errorf("encoding batch message: %w", err)
		}
		raws = append(raws, raw)
	}
	return json.Marshal(raws)
}

// Close implements mcp.Connection: it ends the server.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.out.Close()
		close(c.closed)
	})
	return c.closeErr
}

// decodeBatch decodes one JSON value read off the stream: a message, or
// a batch of them.
func decodeBatch(data []byte) (msgs []jsonrpc.Message, isBatch bool, err error) {
	var raws []json.RawMessage
	if decodeLikeSDK(data, &raws) == nil {
		if len(raws) == 0 {
			return nil, true, errors.New("empty batch")
		}
		for _, raw := range raws {
			msg, err := decodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, msg)
		}
		return msgs, true, nil
	}
	msg, err := decodeMessage(data)
	return []jsonrpc.Message{msg}, false, err
}

// wireMessage is the shape the SDK decodes a JSON-RPC message from;
// Method is raw to tell an absent method from an empty one.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage is jsonrpc.DecodeMessage without its decoders.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var msg wireMessage
	if err := decodeLikeSDK(data, &msg); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if msg.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", msg.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return nil, err
	}
	if len(msg.Method) > 0 {
		var method string
		if err := decodeLikeSDK(msg.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: msg.Params}, nil
	}
	if !id.IsValid() {
		return nil, jsonrpc2InvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: msg.Result}
	if msg.Error != nil {
		resp.Error = msg.Error
	}
	return resp, nil
}
