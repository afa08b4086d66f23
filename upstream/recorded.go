package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errRecorded is why a server of a recorded Set has no session.
var errRecorded = errors.New("its tools are known from their pins only: it is not started")

// Recorded returns the Set of cfg whose MCP servers offer exactly the
// tools defs holds, by server name, as their pins on a ledger define
// them: nothing is started or contacted, and a call of one of its MCP
// tools fails as unavailable. Each tool is exposed, governed and given
// its contracts (Contracts, Tools) as Open's would be for a server that
// listed those definitions, but for the resources and prompts, which it
// leaves out. A governance key that matches none of them is no error
// here, as it is for Open: a tool never pinned is unknown, not absent. It
// serves a replay, which decides recorded calls under a new
// configuration. Its Close does nothing.
func Recorded(cfg Config, defs map[string][]Definition) (*Set, error) {
	cfg.Resources, cfg.Prompts = nil, nil
	s := &Set{cfg: cfg, log: slog.New(slog.DiscardHandler), changed: make(chan struct{}, 1)}
	if cfg.Logger != nil {
		s.log = cfg.Logger
	}
	for _, srv := range cfg.Servers {
		c := &Conn{srv: srv, listed: true, down: errRecorded, closed: true, stop: func() {}, done: make(chan struct{})}
		close(c.done)
		for _, d := range defs[srv.Name] {
			t, err := d.tool()
			if err != nil {
				return nil, fmt.Errorf("upstream %s: %w", srv.Name, err)
			}
			c.tools = append(c.tools, t)
		}
		s.conns = append(s.conns, c)
	}
	listed := s.listedNow()
	offers, err := s.offer(listed)
	if err != nil {
		return nil, err
	}
	s.offers, s.listed = offers, listed
	return s, nil
}

// tool is the MCP tool a definition describes.
func (d Definition) tool() (*mcp.Tool, error) {
	if len(d.InputSchema) == 0 {
		return nil, errors.New("tool " + d.Name + ": the pinned definition has no input schema")
	}
	t := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description, Annotations: d.Annotations,
		InputSchema: d.InputSchema}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	return t, nil
}

// PinnedDefinition reads the body of a tool.pinned or tool.repinned
// entry: the tool's exposed name, its server, and its definition.
func PinnedDefinition(body json.RawMessage) (exposed, server string, d Definition, err error) {
	var b struct {
		Tool       string     `json:"tool"`
		Upstream   string     `json:"upstream"`
		Definition Definition `json:"definition"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return "", "", Definition{}, fmt.Errorf("pin body: %w", err)
	}
	if b.Tool == "" || b.Upstream == "" || b.Definition.Name == "" {
		return "", "", Definition{}, errors.New("pin body: want tool, upstream and definition.name")
	}
	return b.Tool, b.Upstream, b.Definition, nil
}
