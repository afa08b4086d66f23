package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// approvalsCommands are the subcommands of `custody approvals`.
func approvalsCommands() map[string]command {
	return map[string]command{
		"approve": {"approve a pending request as an operator", (*Main).runApprove},
		"decline": {"decline a pending request as an operator", (*Main).runDecline},
		"expire":  {"run the expiry sweep now: expire and escalate overdue requests", (*Main).runExpire},
		"list":    {"list approval requests", (*Main).runApprovalsList},
	}
}

// runApprovals dispatches `custody approvals SUBCOMMAND`.
func (m *Main) runApprovals(ctx context.Context, args []string) int {
	return m.dispatchGroup(ctx, "approvals", approvalsCommands(), args)
}

// runApprovalsList prints the requests, newest first, as a table or JSON.
func (m *Main) runApprovalsList(ctx context.Context, args []string) int {
	fs := m.flags("approvals list", "[--status S] [--json] [--data DIR]")
	status := fs.String("status", "", "only requests with this `STATUS`: pending, approved, declined, expired, consumed")
	asJSON := fs.Bool("json", false, "print a JSON array")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	s, err := m.openStack(ctx, *data, *contracts)
	if err != nil {
		return m.fail(err)
	}
	defer s.Close()
	as, err := s.approvals.List(ctx, custody.ApprovalStatus(*status))
	if err != nil {
		return m.fail(err)
	}
	if *asJSON {
		if as == nil {
			as = []custody.Approval{}
		}
		return m.printJSON(as)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTOOL\tTRACE\tEXPIRES\tARGUMENTS")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Status, a.Tool, a.Trace, custody.FormatTime(a.ExpiresAt), a.Arguments)
	}
	tw.Flush()
	return exitOK
}

// setFlags is a repeatable field=value flag.
type setFlags map[string]string

// String implements flag.Value.
func (s setFlags) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value.
func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want FIELD=VALUE, got %q", v)
	}
	s[k] = val
	return nil
}

// decisionFlags are the flags approve and decline share.
type decisionFlags struct {
	fs        *flag.FlagSet
	operator  *string
	note      *string
	data      *string
	contracts *string
	config    *string
}

func (m *Main) decisionFlags(name, usage string) decisionFlags {
	fs := m.flags(name, usage)
	return decisionFlags{
		fs:        fs,
		operator:  fs.String("operator", m.env("CUSTODY_OPERATOR", ""), "operator `ID` deciding (env CUSTODY_OPERATOR); required"),
		note:      fs.String("note", "", "a `NOTE` recorded with the decision"),
		data:      m.dataFlag(fs),
		contracts: m.contractsFlag(fs),
		config:    m.configFlag(fs),
	}
}

// parseDecision parses args that name the request first or after the
// flags, and returns the request id.
func (m *Main) parseDecision(d decisionFlags, args []string) (id string, ok bool, code int) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if ok, code := m.parse(d.fs, args); !ok {
		return "", false, code
	}
	if id == "" && d.fs.NArg() == 1 {
		id = d.fs.Arg(0)
	} else if d.fs.NArg() > 0 {
		return "", false, m.flagUsage(d.fs, "name one approval request")
	}
	if id == "" || *d.operator == "" {
		return "", false, m.flagUsage(d.fs, "the request ID and --operator are required")
	}
	return id, true, exitOK
}

// runApprove approves a request, optionally with edited arguments:
//
//	custody approvals approve ID --operator OP [--note N] [--set field=value]...
func (m *Main) runApprove(ctx context.Context, args []string) int {
	d := m.decisionFlags("approvals approve", "ID --operator ID [--note N] [--set FIELD=VALUE]...")
	set := setFlags{}
	d.fs.Var(set, "set", "edit an editable string argument: `FIELD=VALUE` (repeatable)")
	id, ok, code := m.parseDecision(d, args)
	if !ok {
		return code
	}
	return m.decide(ctx, d, id, approval.Approve, set)
}

// runDecline declines a request:
//
//	custody approvals decline ID --operator OP [--note N]
func (m *Main) runDecline(ctx context.Context, args []string) int {
	d := m.decisionFlags("approvals decline", "ID --operator ID [--note N]")
	id, ok, code := m.parseDecision(d, args)
	if !ok {
		return code
	}
	return m.decide(ctx, d, id, approval.Decline, nil)
}

// decide records the decision and prints the decided approval. The stack
// is the one the configuration serves, so that an approval is checked
// against the contract and policy of the tool that will run it.
func (m *Main) decide(ctx context.Context, d decisionFlags, id, decision string, set setFlags) int {
	s, err := m.configuredStack(ctx, *d.data, *d.contracts, *d.config)
	if err != nil {
		return m.fail(err)
	}
	defer s.Close()
	dec := approval.Decision{Decision: decision, Operator: *d.operator, Note: *d.note}
	if len(set) > 0 {
		a, err := s.approvals.Get(ctx, id)
		if err != nil {
			return m.printError(err)
		}
		if dec.Arguments, err = editArguments(a.Arguments, set); err != nil {
			return m.printError(err)
		}
	}
	a, err := s.approvals.Decide(ctx, id, dec)
	if err != nil {
		return m.printError(err)
	}
	return m.printJSON(a)
}

// editArguments returns args with the string members named in set
// replaced. The service checks that only editable members changed.
func editArguments(args json.RawMessage, set setFlags) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, custody.Errorf(custody.EINVALID, "the request's arguments are not a JSON object")
	}
	for k, v := range set {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", k, err)
		}
		obj[k] = b
	}
	return json.Marshal(obj)
}

// runExpire runs the expiry sweep once and prints how many expired.
func (m *Main) runExpire(ctx context.Context, args []string) int {
	fs := m.flags("approvals expire", "[--data DIR]")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	s, err := m.openStack(ctx, *data, *contracts)
	if err != nil {
		return m.fail(err)
	}
	defer s.Close()
	n, err := s.approvals.ExpireDue(ctx)
	if err != nil {
		return m.fail(err)
	}
	return m.printJSON(map[string]int{"expired": n})
}

// dispatchGroup runs the subcommand of `custody GROUP SUBCOMMAND` that
// args name, or says which there are.
func (m *Main) dispatchGroup(ctx context.Context, group string, cmds map[string]command, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(m.Stderr, "usage: custody %s SUBCOMMAND [flags]\n\nsubcommands:\n", group)
		for _, name := range slices.Sorted(maps.Keys(cmds)) {
			fmt.Fprintf(m.Stderr, "  %-8s %s\n", name, cmds[name].summary)
		}
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "custody %s: unknown subcommand %q\n", group, args[0])
		return exitUsage
	}
	return c.run(m, ctx, args[1:])
}
