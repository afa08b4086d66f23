package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/identity"
	"github.com/custody-dev/custody/upstream"
)

// runConfig works with configuration files:
//
//	custody config schema          print the JSON Schema of the file
//	custody config check FILE      check a file and list what it would expose
//	custody config scan FILE       list every upstream tool and print a tools block to paste
func (m *Main) runConfig(ctx context.Context, args []string) int {
	usage := "schema | check FILE | scan FILE"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(m.Stderr, "usage: custody config %s\n", usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "schema":
		m.Stdout.Write(config.Schema())
		return exitOK
	case "check", "scan":
		fs := m.flags("config "+args[0], "FILE")
		if ok, code := m.parse(fs, args[1:]); !ok {
			return code
		}
		if fs.NArg() != 1 {
			return m.flagUsage(fs, "name one configuration file")
		}
		if args[0] == "check" {
			return m.configCheck(ctx, fs.Arg(0))
		}
		return m.configScan(ctx, fs.Arg(0))
	}
	fmt.Fprintf(m.Stderr, "custody config: unknown subcommand %q (want %s)\n", args[0], usage)
	return exitUsage
}

// openOffers loads a file and connects to its upstreams, for a look.
func (m *Main) openOffers(ctx context.Context, path string) (*config.File, *upstream.Set, error) {
	f, err := m.loadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	cfg := f.Upstream()
	cfg.Logger = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	set, err := upstream.Open(ctx, cfg)
	if err != nil {
		return nil, nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: err.Error(), Err: err}
	}
	return f, set, nil
}

// configCheck checks a file, connects to its upstreams and lists every
// tool they offer with what custody would do with it, then explains the
// auth set-up serve would use, having reached each issuer.
func (m *Main) configCheck(ctx context.Context, path string) int {
	f, set, err := m.openOffers(ctx, path)
	if err != nil {
		return m.fail(err)
	}
	defer set.Close()
	if _, err := set.Contracts(); err != nil {
		return m.fail(&custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err})
	}
	printOffers(m.Stdout, set.Offers())
	printRelayOffers(m.Stdout, set)
	printResourceKeys(m.Stdout, set.ResourceKeys())
	printDown(m.Stdout, set.Down())
	if err := m.printAuth(ctx, m.Stdout, f); err != nil {
		return m.fail(err)
	}
	return exitOK
}

// printResourceKeys prints the resource patterns the doors read through,
// each with its policy: what a resources/read may name, besides what the
// upstreams list now.
func printResourceKeys(w io.Writer, keys []upstream.ResourceKey) {
	if len(keys) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE PATTERN\tACCESS\tMAX BYTES\tAPPROVAL")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\tREAD\t%d\t%s\n", k.Pattern, k.MaxBytes, cmp.Or(k.Approval, custody.NotRequired))
	}
	tw.Flush()
}

// printDown names each server that could not be reached: serve starts
// without it (unless --require-all-upstreams) and exposes its tools when
// it comes up; meanwhile its exact keys are exposed as unavailable tools.
func printDown(w io.Writer, down []upstream.DownServer) {
	for _, d := range down {
		if d.Connect {
			fmt.Fprintf(w, "upstream %s waits for an operator to connect it (the authorization code grant): press Connect %s in serve's console, or POST /v1/upstreams/%s/connect; its exact keys are exposed meanwhile as unavailable tools\n", d.Name, d.Name, d.Name)
			continue
		}
		fmt.Fprintf(w, "upstream %s is down (%s): its tools are exposed when it comes up; its exact keys meanwhile as unavailable tools\n", d.Name, d.Err)
	}
}

// printOffers prints one line a tool: exposed or not, and its policy.
func printOffers(w io.Writer, offers []upstream.Offer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tUPSTREAM\tEXPOSED\tACCESS\tEFFECT\tAPPROVAL\tGOVERNED BY")
	exposed := 0
	for _, o := range offers {
		if o.Key == "" {
			fmt.Fprintf(tw, "%s\t%s\tno\t-\t-\t-\t(no policy: denied)\n", o.Exposed, o.Upstream)
			continue
		}
		exposed++
		p, yes := o.Policy, "yes"
		if o.Waiting {
			yes = "yes (down: unavailable)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Exposed, o.Upstream, yes, p.Access, p.Effect, p.Approval, o.Key)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d tools exposed\n", exposed, len(offers))
}

// suggestion is a tools entry printed by scan.
type suggestion struct {
	Access   custody.Access         `json:"access"`
	Effect   custody.Effect         `json:"effect"`
	Approval custody.ApprovalPolicy `json:"approval"`
}

// configScan connects to every upstream of a file and prints a tools
// block for every MCP tool they offer, suggested from the tools' MCP
// annotations: a suggestion to review, since annotations are the
// server's claim, not a guarantee.
func (m *Main) configScan(ctx context.Context, path string) int {
	_, set, err := m.openOffers(ctx, path)
	if err != nil {
		return m.fail(err)
	}
	defer set.Close()
	tools := map[string]suggestion{}
	for _, o := range set.Offers() {
		if o.Tool != nil {
			tools[o.Exposed] = suggest(o.Tool.Annotations)
		}
	}
	out, err := json.MarshalIndent(map[string]any{"tools": tools}, "", "  ")
	if err != nil {
		return m.fail(err)
	}
	fmt.Fprintln(m.Stderr, "# suggested from each tool's MCP annotations, which are the server's claim, not a guarantee:")
	fmt.Fprintln(m.Stderr, "# review every line, remove what no agent needs, and narrow with \"arguments\" where you can")
	fmt.Fprintf(m.Stdout, "%s\n", out)
	return exitOK
}

// suggest maps MCP annotations to a policy: a read-only tool reads with
// no effect; any other is a write, consequential and held for a human
// unless the server says it is not destructive (MCP's default for
// destructiveHint is true).
func suggest(a *mcp.ToolAnnotations) suggestion {
	switch {
	case a != nil && a.ReadOnlyHint:
		return suggestion{custody.Read, custody.EffectNone, custody.NotRequired}
	case a != nil && a.DestructiveHint != nil && !*a.DestructiveHint:
		return suggestion{custody.Write, custody.EffectReversible, custody.NotRequired}
	}
	return suggestion{custody.Write, custody.EffectConsequential, custody.HumanConfirmation}
}

// printAuth explains the auth set-up serve would use: the resource, each
// issuer of agents' tokens and the console's sign-in, each issuer's
// discovery document reached. It returns EINVALID naming what would keep
// tokens or sign-ins from working (a document naming another issuer, an
// endpoint custody needs that it lacks); an issuer that cannot be reached
// is said and is no error, as a down upstream is not.
func (m *Main) printAuth(ctx context.Context, w io.Writer, f *config.File) error {
	a := f.Auth
	if a == nil {
		fmt.Fprintln(w, "auth: static tokens only (no \"auth\"): agents, operators and auditors present custody's own tokens")
		return nil
	}
	meta, err := identity.NewMetadata(a.Resource, nil, nil)
	if err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "auth: " + err.Error()}
	}
	e := &explainer{tw: tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)}
	fmt.Fprintln(e.tw, "AUTH")
	e.row("resource", "%s (the audience agents' access tokens name, or %s/mcp)", strings.TrimSuffix(a.Resource, "/"), strings.TrimSuffix(a.Resource, "/"))
	e.row("  metadata", "%s and %s (RFC 9728, named by every 401)", meta.URL(false), meta.URL(true))
	for _, is := range a.Issuers {
		e.issuer(ctx, a, is)
	}
	if a.Console != nil {
		c, err := m.consoleClient(f)
		if err != nil {
			return &custody.Error{Kind: custody.EINVALID, Message: err.Error()}
		}
		e.console(ctx, f, c)
	}
	e.tw.Flush()
	if len(e.problems) > 0 {
		return custody.Errorf(custody.EINVALID, "auth: %s", strings.Join(e.problems, "; "))
	}
	return nil
}

// explainer writes printAuth's table and gathers its problems.
type explainer struct {
	tw       *tabwriter.Writer
	problems []string
}

func (e *explainer) row(key, format string, args ...any) {
	fmt.Fprintf(e.tw, "%s\t%s\n", key, fmt.Sprintf(format, args...))
}

// problem is a row and a problem.
func (e *explainer) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.row("  PROBLEM", "%s", msg)
	e.problems = append(e.problems, msg)
}

// discover reaches an issuer's discovery document and says so: false
// when it could not (a problem when the document is wrong, not when the
// issuer is down).
func (e *explainer) discover(err error, meta identity.ServerMetadata, down string) bool {
	switch {
	case err == nil:
		e.row("  discovery", "reached %s", meta.URL)
		return true
	case custody.ErrorKind(err) == custody.EUNAVAILABLE:
		e.row("  discovery", "NOT REACHED: %s (%s)", custody.ErrorMessage(err), down)
	default:
		e.problem("%s", custody.ErrorMessage(err))
	}
	return false
}

// issuer explains one issuer of agents' access tokens.
func (e *explainer) issuer(ctx context.Context, a *config.Auth, is config.AuthIssuer) {
	e.row("issuer", "%s (agents' access tokens)", is.Issuer)
	meta, err := identity.Discover(ctx, nil, is.Issuer)
	reached := e.discover(err, meta, "its tokens are refused until it answers")
	e.row("  audience", "%s", cmp.Or(is.Audience, strings.TrimSuffix(a.Resource, "/")))
	agent := "claim " + cmp.Or(is.AgentClaim, "sub") + ", named ISSUER#SUBJECT"
	if is.GroupsClaim != "" {
		agent += "; groups from claim " + is.GroupsClaim
	}
	e.row("  agent", "%s", agent)
	algs := cmp.Or(strings.Join(is.Algs, ", "), "RS256")
	if reached && meta.JWKSURI == "" {
		e.row("  JWTs", "not checkable: %s publishes no jwks_uri", meta.URL)
	} else {
		e.row("  JWTs", "signed with %s, checked with the keys at %s", algs, cmp.Or(meta.JWKSURI, "its jwks_uri"))
	}
	in := is.Introspection
	switch {
	case in == nil:
		e.row("  opaque", "refused (no introspection)")
	case in.Endpoint == "" && reached && meta.IntrospectionEndpoint == "":
		e.problem("%s publishes no introspection_endpoint: give auth.issuers[].introspection.endpoint", meta.URL)
	default:
		e.row("  opaque", "introspected at %s as client %s (secret set)", cmp.Or(in.Endpoint, meta.IntrospectionEndpoint, "its introspection_endpoint"), in.ClientID)
	}
}

// console explains the console's sign-in at its provider.
func (e *explainer) console(ctx context.Context, f *config.File, c *identity.Console) {
	cc := f.Auth.Console
	e.row("console", "operators and auditors sign in at %s", c.Issuer())
	meta, err := c.Metadata(ctx)
	reached := e.discover(err, meta, "nobody signs in there until it answers; the sign-in link and tokens still work")
	from := "auth.resource"
	if f.ConsoleURL != "" {
		from = "console_url"
	}
	e.row("  redirect URI", "%s (from %s): register it at the provider for client %s", c.RedirectURL(), from, cc.ClientID)
	if reached {
		e.row("  client", "%s, authenticating as %s", cc.ClientID, c.AuthMethod(meta))
		e.row("  flow", "authorization code with PKCE (S256) and a nonce at %s; code redeemed at %s", meta.AuthorizationEndpoint, meta.TokenEndpoint)
		e.row("  scopes", "%s", strings.Join(c.Scopes(meta), " "))
		if meta.UserinfoEndpoint != "" {
			e.row("  userinfo", "%s, for a roles claim or name the ID token lacks", meta.UserinfoEndpoint)
		}
	}
	e.row("  roles", "from claim %q: operator for %s; auditor for %s; anyone else is refused", c.RolesClaim(), orNone(cc.Operators), orNone(cc.Auditors))
	if !reached {
		return
	}
	problems, warnings := c.Check(meta)
	for _, p := range problems {
		e.problem("%s", p)
	}
	for _, w := range warnings {
		e.row("  warning", "%s", w)
	}
}

// orNone lists values, or says there are none.
func orNone(values []string) string {
	if len(values) == 0 {
		return "(none)"
	}
	return strings.Join(values, ", ")
}
