// Package config reads the one file that tells custody what to govern:
// the upstream MCP servers (in the shape MCP clients' configuration files
// already use), plain HTTP tools, each exposed tool's policy, which agent
// may use which tools, and where custody listens and keeps its data.
//
// The file is JSON. It is checked against a JSON Schema that ships in the
// binary (Schema), so that an unknown or misspelt field is refused with
// its path. "${env:NAME}" in any string is replaced from the environment
// at load; a variable that is not set is an error naming it, and any
// other "${...}" (an editor's variable, a VS Code input) is refused. The
// server blocks of other MCP clients load unchanged (clients.go); what
// custody ignores of them is reported by Warnings.
package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/upstream"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the configuration file.
func Schema() []byte { return slices.Clone(schemaJSON) }

// schemaName is the registry's short name of the schema.
const schemaName = "custody-config"

// File is a configuration file, as read.
type File struct {
	Addr       string               `json:"addr"`
	Data       string               `json:"data"`
	Store      string               `json:"store"`
	Contracts  string               `json:"contracts"`
	Systems    []string             `json:"systems"`
	Tokens     Tokens               `json:"tokens"`
	Webhooks   []Webhook            `json:"webhooks"`
	ConsoleURL string               `json:"console_url"`
	EscalateAt float64              `json:"escalateAt"`
	MCPServers map[string]MCPServer `json:"mcpServers"`
	HTTPTools  map[string]HTTPTool  `json:"httpTools"`
	Tools      map[string]Policy    `json:"tools"`
	// Resources govern the upstreams' resources by exposed URI
	// (SERVER+URI) or URI glob; Prompts their prompts by exposed name
	// (SERVER__PROMPT) or glob. What no key matches is not exposed.
	Resources map[string]ResourcePolicy `json:"resources"`
	Prompts   map[string]PromptPolicy   `json:"prompts"`
	Agents    map[string]Agent          `json:"agents"`
	Witnesses []Witness                 `json:"witnesses"`
	HTTP      HTTP                      `json:"http"`
	TLS       *TLS                      `json:"tls"`

	// ConsoleSessionLifetime is how long a console sign-in lasts, as a
	// duration ("8h"); the server's default when empty.
	ConsoleSessionLifetime string `json:"console_session_lifetime"`
	Mesh                   Mesh   `json:"mesh"`
	MCP                    MCP    `json:"mcp"`
	// RequireAllUpstreams makes serve fail at start when an MCP server
	// cannot be reached (--require-all-upstreams); without it serve
	// starts degraded and the server's tools appear when it comes up.
	RequireAllUpstreams bool `json:"requireAllUpstreams"`
	// Auth makes custody an OAuth 2.1 resource server (auth.go).
	Auth *Auth `json:"auth"`

	// warnings are what the file holds that custody ignores (Warnings).
	warnings []string
}

// HTTP tunes the HTTP server against slow and greedy clients. Durations
// are Go durations ("5s"); an empty one, or a zero size, is serve's
// default.
type HTTP struct {
	// ReadHeaderTimeout bounds the time a client may take to send a
	// request's header.
	ReadHeaderTimeout string `json:"readHeaderTimeout"`
	// ReadTimeout bounds the time a client may take to send a request's
	// body.
	ReadTimeout string `json:"readTimeout"`
	// WriteTimeout bounds the time from a request's header to the end of
	// its answer; it must be longer than every tool's timeout. The event
	// stream bounds each event's write instead.
	WriteTimeout string `json:"writeTimeout"`
	// IdleTimeout bounds the time a kept-alive connection may wait for
	// its next request.
	IdleTimeout string `json:"idleTimeout"`
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64 `json:"maxBodyBytes"`
}

// HTTPTimeouts are an HTTP object's durations, zero where not given.
type HTTPTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// Timeouts returns the durations of h, which Parse has checked.
func (h HTTP) Timeouts() HTTPTimeouts {
	d := func(s string) time.Duration {
		v, _ := time.ParseDuration(s)
		return v
	}
	return HTTPTimeouts{ReadHeader: d(h.ReadHeaderTimeout), Read: d(h.ReadTimeout), Write: d(h.WriteTimeout), Idle: d(h.IdleTimeout)}
}

// TLS is the certificate and key serve answers HTTPS with: PEM files, the
// certificate file holding the chain.
type TLS struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Mesh is how serve joins the wildfire mesh over NATS: the roster of
// admitted nodes and aggregators, the desk's own key, and the names that
// keep this deployment apart from others on the same server. Empty
// subjects and consumer are derived from the ledger id.
type Mesh struct {
	Roster   string `json:"roster"`
	Key      string `json:"key"`
	Subjects string `json:"subjects"`
	Consumer string `json:"consumer"`
}

// MCP configures the MCP door at /mcp. Zero values leave the defaults.
type MCP struct {
	// SessionIdleTimeout closes a session without a request for this
	// long, e.g. "30m".
	SessionIdleTimeout string `json:"sessionIdleTimeout"`
	// MaxSessionsPerAgent caps the sessions one agent holds open.
	MaxSessionsPerAgent int `json:"maxSessionsPerAgent"`
	// AllowedOrigins are browser origins that may call /mcp besides the
	// server's own.
	AllowedOrigins []string `json:"allowedOrigins"`
}

// IdleTimeout returns the session idle timeout, zero when not set.
func (m MCP) IdleTimeout() time.Duration {
	d, _ := time.ParseDuration(m.SessionIdleTimeout)
	return d
}

// Witness cosigns every checkpoint (C2SP tlog-witness): where its
// add-checkpoint endpoint is and its note verifier key.
type Witness struct {
	URL string `json:"url"`
	Key string `json:"key"`
}

// Tokens are bearer tokens by role, each "id:token".
type Tokens struct {
	Agent    []string `json:"agent"`
	Operator []string `json:"operator"`
	Auditor  []string `json:"auditor"`
}

// Webhook notifies of approvals, in escalation order after the console.
// With a Secret (Standard Webhooks' "whsec_" form) every notification is
// signed.
type Webhook struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// MCPServer is one upstream MCP server: a command custody starts and
// talks to over stdio, or the URL of a streamable HTTP (or, with Type
// "sse", a legacy HTTP+SSE) endpoint. MCPServers holds the servers of
// both the "mcpServers" and the "servers" block, Windsurf's "serverUrl"
// as URL, and the variables of EnvFile in Env.
type MCPServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// EnvFile is a dotenv file whose variables Parse has added to Env
	// (where Env does not set them).
	EnvFile  string            `json:"envFile"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
	// Timeout is how many seconds a call of one of the server's tools may
	// take, where the tool's policy sets no timeout.
	Timeout json.Number `json:"timeout"`
	// Prefix is put before the server's tool and prompt names; nil for
	// the default, NAME__.
	Prefix *string `json:"prefix"`
	// ClientFeatures are the requests of the client the server may make.
	ClientFeatures []string `json:"clientFeatures"`
	// OAuth makes custody obtain its own access token for a server at a
	// URL (oauth.go).
	OAuth *OAuth `json:"oauth"`
}

// HTTPTool is a tool that is a plain HTTP endpoint.
type HTTPTool struct {
	URL         string            `json:"url"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers"`
	Input       json.RawMessage   `json:"input"`
	Output      json.RawMessage   `json:"output"`
	Description string            `json:"description"`
}

// Policy governs one exposed tool, in the envelope's words.
type Policy struct {
	Access           custody.Access         `json:"access"`
	Effect           custody.Effect         `json:"effect"`
	Approval         custody.ApprovalPolicy `json:"approval"`
	MaxCallsPerTrace int                    `json:"maxCallsPerTrace"`
	// MaxRefusalsPerTrace is the tool's refusal budget per trace.
	MaxRefusalsPerTrace int `json:"maxRefusalsPerTrace"`
	// MaxResultBytes bounds the size of the tool's result.
	MaxResultBytes int64  `json:"maxResultBytes"`
	Timeout        string `json:"timeout"`
	// ApprovalWait is how long a HUMAN_CONFIRMATION call is held open
	// for its decision ("2m"); none: answered pending_approval at once.
	ApprovalWait  string          `json:"approvalWait"`
	Arguments     json.RawMessage `json:"arguments"`
	Output        json.RawMessage `json:"output"`
	OpenArguments bool            `json:"openArguments"`
	Editable      []string        `json:"editable"`
	// Approvers say who may decide a held call: "console" (operators)
	// and "client" (the user of the MCP client that made it, asked
	// through elicitation). Left out: operators only.
	Approvers []string `json:"approvers"`
	// Grants, when false, forbids grants for the tool: every call is
	// approved once. Left out: an operator may grant a class of calls.
	Grants *bool `json:"grants"`
	// DenyWhen, ApproveWhen and AllowWhen are CEL conditions over each
	// call (conditions.go); Rate its rate limits.
	DenyWhen    Exprs `json:"denyWhen"`
	ApproveWhen Exprs `json:"approveWhen"`
	AllowWhen   Exprs `json:"allowWhen"`
	Rate        Rates `json:"rate"`
}

// ResourcePolicy governs the resources a key matches: they are read
// (access READ), at most MaxBytes at a time (4 MiB when zero), with or
// without a human's confirmation of each read.
type ResourcePolicy struct {
	Access   custody.Access         `json:"access"`
	MaxBytes int64                  `json:"maxBytes"`
	Approval custody.ApprovalPolicy `json:"approval"`
}

// PromptPolicy governs the prompts a key matches.
type PromptPolicy struct {
	Approval custody.ApprovalPolicy `json:"approval"`
}

// Agent says which tools one agent may see and call.
type Agent struct {
	Tools []string `json:"tools"`
}

// Load reads and checks the file at p. getenv resolves ${env:NAME}.
func Load(p string, getenv func(string) string) (*File, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	f, err := Parse(raw, getenv)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", p, err)
	}
	// A relative data directory is the file's, wherever custody was
	// launched from: an MCP client starts it in a directory of its own.
	if f.Data != "" && !filepath.IsAbs(f.Data) {
		f.Data = filepath.Join(filepath.Dir(p), f.Data)
	}
	return f, nil
}

// Parse checks a configuration document and returns it. Errors name the
// path of what is wrong; what it accepts and ignores, the File's
// Warnings name.
func Parse(raw []byte, getenv func(string) string) (*File, error) {
	tree, err := decodeStrict(raw)
	if err != nil {
		return nil, err
	}
	if err := checkDuplicateKeys(raw); err != nil {
		return nil, err
	}
	if err := checkVariables(tree, ""); err != nil {
		return nil, err
	}
	if tree, err = substitute(tree, "", getenv); err != nil {
		return nil, err
	}
	if err := checkServerShapes(tree); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	if err := check(doc); err != nil {
		return nil, err
	}
	doc, warnings, err := adopt(tree)
	if err != nil {
		return nil, err
	}
	f := File{warnings: warnings}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := f.checkPolicies(); err != nil {
		return nil, err
	}
	if _, err := f.SessionLifetime(); err != nil {
		return nil, err
	}
	if err := f.checkAuth(); err != nil {
		return nil, err
	}
	if err := f.checkOAuth(); err != nil {
		return nil, err
	}
	return &f, nil
}

// SessionLifetime returns console_session_lifetime as a duration: zero
// when absent, an error naming the field when it is not a positive
// duration.
func (f *File) SessionLifetime() (time.Duration, error) {
	if f.ConsoleSessionLifetime == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(f.ConsoleSessionLifetime)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("/console_session_lifetime: %q is not a positive duration such as \"8h\" or \"30m\"", f.ConsoleSessionLifetime)
	}
	return d, nil
}

// decodeStrict decodes one JSON value, keeping number literals and
// refusing trailing data.
func decodeStrict(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return v, nil
}

// envRef matches ${env:NAME}.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces ${env:NAME} in every string of v (at ptr).
func substitute(v any, ptr string, getenv func(string) string) (any, error) {
	switch t := v.(type) {
	case string:
		var missing string
		out := envRef.ReplaceAllStringFunc(t, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			val := getenv(name)
			if val == "" && missing == "" {
				missing = name
			}
			return val
		})
		if missing != "" {
			return nil, fmt.Errorf("%s: environment variable %s is not set", orRoot(ptr), missing)
		}
		return out, nil
	case map[string]any:
		for k, sub := range t {
			r, err := substitute(sub, ptr+"/"+escape(k), getenv)
			if err != nil {
				return nil, err
			}
			t[k] = r
		}
	case []any:
		for i, sub := range t {
			r, err := substitute(sub, fmt.Sprintf("%s/%d", ptr, i), getenv)
			if err != nil {
				return nil, err
			}
			t[i] = r
		}
	}
	return v, nil
}

func escape(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// check validates doc against the schema.
func check(doc []byte) error {
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{schemaName + ".json": schemaJSON}})
	if err != nil {
		return fmt.Errorf("the configuration schema: %w", err)
	}
	err = reg.Validate("https://custody.dev/schemas/config/v1", doc)
	if err == nil {
		return nil
	}
	ce := custody.AsError(err)
	if len(ce.Violations) == 0 {
		return err
	}
	var lines []string
	for _, v := range ce.Violations {
		lines = append(lines, fmt.Sprintf("%s: %s", orRoot(v.Instance), v.Message))
	}
	return errors.New(strings.Join(lines, "; "))
}

// checkPolicies checks what the schema cannot: timeouts parse, agent
// globs are well formed, answers are not cut off before a tool's timeout,
// webhook secrets are in the Standard Webhooks form (checked here so that
// no error repeats a secret).
func (f *File) checkPolicies() error {
	if err := f.checkHTTP(); err != nil {
		return err
	}
	for i, w := range f.Webhooks {
		if w.Secret == "" {
			continue
		}
		if _, err := approval.ParseWebhookSecret(w.Secret); err != nil {
			return fmt.Errorf("/webhooks/%d/secret: %v", i, err)
		}
	}
	for name, p := range f.Tools {
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Errorf("/tools/%s: not a valid glob: %v", escape(name), err)
		}
		if p.Timeout != "" {
			if d, err := time.ParseDuration(p.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("/tools/%s/timeout: %q is not a positive duration", escape(name), p.Timeout)
			}
		}
		if p.ApprovalWait != "" {
			if d, err := time.ParseDuration(p.ApprovalWait); err != nil || d <= 0 {
				return fmt.Errorf("/tools/%s/approvalWait: %q is not a positive duration", escape(name), p.ApprovalWait)
			}
		}
		if err := checkApprovers(name, p.Approvers); err != nil {
			return err
		}
		if err := p.checkRules(name); err != nil {
			return err
		}
	}
	for name := range f.Prompts {
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Errorf("/prompts/%s: not a valid glob: %v", escape(name), err)
		}
	}
	if t := f.MCP.SessionIdleTimeout; t != "" {
		if d, err := time.ParseDuration(t); err != nil || d <= 0 {
			return fmt.Errorf("/mcp/sessionIdleTimeout: %q is not a positive duration", t)
		}
	}
	for id, a := range f.Agents {
		for i, g := range a.Tools {
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("/agents/%s/tools/%d: not a valid glob: %v", escape(id), i, err)
			}
		}
	}
	return nil
}

// Upstream returns the upstream configuration the file declares: its
// enabled MCP servers in name order, its HTTP tools and its governance.
func (f *File) Upstream() upstream.Config {
	var cfg upstream.Config
	for _, name := range sortedKeys(f.MCPServers) {
		s := f.MCPServers[name]
		if s.Disabled {
			continue
		}
		cfg.Servers = append(cfg.Servers, upstream.Server{Name: name, Command: s.Command, Args: s.Args,
			Env: s.Env, Dir: s.Cwd, URL: s.URL, Headers: s.Headers, SSE: s.Type == "sse", Timeout: s.timeout(),
			Prefix: s.Prefix, ClientFeatures: s.ClientFeatures, OAuth: s.OAuth.upstream()})
	}
	for _, name := range sortedKeys(f.HTTPTools) {
		h := f.HTTPTools[name]
		cfg.HTTPTools = append(cfg.HTTPTools, upstream.HTTPTool{Name: name, URL: h.URL, Method: h.Method,
			Headers: h.Headers, Input: h.Input, Output: h.Output, Description: h.Description})
	}
	cfg.RequireAll = f.RequireAllUpstreams
	cfg.Governance = upstream.Governance{}
	for name, p := range f.Tools {
		cfg.Governance[name] = withRules(p.policy(), p, name)
	}
	cfg.Resources = upstream.ResourceGovernance{}
	for uri, p := range f.Resources {
		cfg.Resources[uri] = upstream.ResourcePolicy{MaxBytes: p.MaxBytes, Approval: p.Approval}
	}
	cfg.Prompts = upstream.PromptGovernance{}
	for name, p := range f.Prompts {
		cfg.Prompts[name] = upstream.PromptPolicy{Approval: p.Approval}
	}
	return cfg
}

// policy converts a checked policy.
func (p Policy) policy() upstream.Policy {
	out := upstream.Policy{Access: p.Access, Effect: p.Effect, Approval: p.Approval,
		MaxCallsPerTrace: p.MaxCallsPerTrace, MaxRefusalsPerTrace: p.MaxRefusalsPerTrace, Arguments: p.Arguments, Output: p.Output,
		OpenArguments: p.OpenArguments, Editable: p.Editable, MaxResultBytes: p.MaxResultBytes, Grants: p.Grants}
	if out.Approval == "" {
		out.Approval = custody.NotRequired
		if p.Effect == custody.EffectConsequential {
			out.Approval = custody.HumanConfirmation
		}
	}
	out.Timeout, _ = time.ParseDuration(p.Timeout)
	out.ApprovalWait, _ = time.ParseDuration(p.ApprovalWait)
	out.Approvers = slices.Clone(p.Approvers)
	return out
}

// checkApprovers checks a tool's approvers, which the schema has limited
// to known names: listed, they are not empty, and they name operators,
// who may always decide, so that a list never reads as if they could not.
func checkApprovers(tool string, approvers []string) error {
	at := "/tools/" + escape(tool) + "/approvers"
	switch {
	case approvers == nil:
		return nil
	case len(approvers) == 0:
		return fmt.Errorf("%s: name who may decide a held call, [%q] or [%q, %q], or leave it out (operators only)",
			at, custody.ApproverConsole, custody.ApproverConsole, custody.ApproverClient)
	}
	for i, a := range approvers {
		if a != custody.ApproverConsole && a != custody.ApproverClient {
			return fmt.Errorf("%s/%d: %q is not an approver: want %q or %q", at, i, a, custody.ApproverConsole, custody.ApproverClient)
		}
	}
	if !slices.Contains(approvers, custody.ApproverConsole) {
		return fmt.Errorf("%s: an operator can always decide a held call: list %q too, as in [%q, %q]",
			at, custody.ApproverConsole, custody.ApproverConsole, custody.ApproverClient)
	}
	return nil
}

// Allowed returns the check of which agent may use which tool: an agent
// the file lists may use the tools its globs match; any other agent every
// governed tool.
func (f *File) Allowed() func(actor, tool string) bool { return f.AllowedWith(nil) }

// checkHTTP checks that the HTTP durations are positive and that the
// write timeout outlasts every tool's timeout.
func (f *File) checkHTTP() error {
	for _, d := range []struct{ name, value string }{
		{"readHeaderTimeout", f.HTTP.ReadHeaderTimeout}, {"readTimeout", f.HTTP.ReadTimeout},
		{"writeTimeout", f.HTTP.WriteTimeout}, {"idleTimeout", f.HTTP.IdleTimeout},
	} {
		if v, err := time.ParseDuration(d.value); d.value != "" && (err != nil || v <= 0) {
			return fmt.Errorf("/http/%s: %q is not a positive duration", d.name, d.value)
		}
	}
	write := f.HTTP.Timeouts().Write
	if write == 0 {
		return nil
	}
	for _, name := range sortedKeys(f.Tools) {
		if t, _ := time.ParseDuration(f.Tools[name].Timeout); t >= write {
			return fmt.Errorf("/http/writeTimeout: %s does not outlast /tools/%s/timeout %s: its answers would be cut off", write, escape(name), t)
		}
	}
	for _, name := range sortedKeys(f.MCPServers) {
		if t := f.MCPServers[name].timeout(); t >= write {
			return fmt.Errorf("/http/writeTimeout: %s does not outlast the timeout %s of server %q: its tools' answers would be cut off", write, t, name)
		}
	}
	return nil
}

// LongestToolTimeout returns the longest timeout a tool policy or a
// server sets, 0 when none sets one.
func (f *File) LongestToolTimeout() time.Duration {
	var longest time.Duration
	for _, p := range f.Tools {
		if t, _ := time.ParseDuration(p.Timeout); t > longest {
			longest = t
		}
	}
	for _, s := range f.MCPServers {
		longest = max(longest, s.timeout())
	}
	return longest
}

// LongestHeldCall returns the longest time a call of a tool may take
// when its policy holds it for approval: its approvalWait, then its run
// (its timeout, else the longest server timeout); 0 when no policy sets
// an approvalWait.
func (f *File) LongestHeldCall() time.Duration {
	var longest time.Duration
	for _, p := range f.Tools {
		w, _ := time.ParseDuration(p.ApprovalWait)
		if w <= 0 {
			continue
		}
		t, _ := time.ParseDuration(p.Timeout)
		if t <= 0 {
			t = f.LongestToolTimeout()
		}
		longest = max(longest, w+t)
	}
	return longest
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
