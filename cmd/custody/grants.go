package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/upstream"
)

// grantsCommands are the subcommands of `custody grants`. A grant is made
// by approving a held call with one (the console's "Grant…", or the
// decision API's "grant" member); here it is listed and revoked.
func grantsCommands() map[string]command {
	return map[string]command{
		"list":   {"list the grants, with their uses and status", (*Main).runGrantsList},
		"revoke": {"revoke a grant as an operator", (*Main).runGrantsRevoke},
	}
}

// runGrants dispatches `custody grants SUBCOMMAND`.
func (m *Main) runGrants(ctx context.Context, args []string) int {
	return m.dispatchGroup(ctx, "grants", grantsCommands(), args)
}

// grantStore is the store a grants command reads and the approval service
// over it.
type grantStore struct {
	db  dataStore
	svc *approval.Service
}

// openGrants opens the store --store names, or SQLite in --data.
func (m *Main) openGrants(data, store string) (*grantStore, error) {
	db, err := m.withStore(store).openStore(data)
	if err != nil {
		return nil, err
	}
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, State: db})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &grantStore{db: db, svc: svc}, nil
}

// pinned returns the definition of a tool as its pin in the store says,
// so that a grant made under another shows void. A store error leaves
// the tool unknown: the list still shows the grant as it stands.
func (gs *grantStore) pinned(ctx context.Context) func(tool string) (string, bool) {
	return func(tool string) (string, bool) {
		def, ok, err := upstream.PinnedIn(ctx, gs.db, tool)
		return def, ok && err == nil
	}
}

// runGrantsList prints the grants, newest first, as a table or JSON:
//
//	custody grants list [--data DIR | --store URL] [--json]
func (m *Main) runGrantsList(ctx context.Context, args []string) int {
	fs := m.flags("grants list", "[--data DIR | --store URL] [--json]")
	asJSON := fs.Bool("json", false, "print a JSON array")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	gs, err := m.openGrants(*data, *store)
	if err != nil {
		return m.fail(err)
	}
	defer gs.db.Close()
	grants, err := gs.svc.Grants(ctx, gs.pinned(ctx))
	if err != nil {
		return m.fail(err)
	}
	if *asJSON {
		if grants == nil {
			grants = []custody.Grant{}
		}
		return m.printJSON(grants)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tTOOL\tUSES\tEXPIRES\tOPERATOR\tARGUMENTS")
	for _, g := range grants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Status, g.Agent, g.Tool, usesOf(g), expiryOf(g), g.Operator, g.Arguments)
	}
	tw.Flush()
	return exitOK
}

// usesOf shows a grant's uses against its limit.
func usesOf(g custody.Grant) string {
	if g.MaxUses == 0 {
		return strconv.FormatInt(g.Uses, 10)
	}
	return fmt.Sprintf("%d/%d", g.Uses, g.MaxUses)
}

// expiryOf shows a grant's expiry, "-" for none.
func expiryOf(g custody.Grant) string {
	if g.ExpiresAt == nil {
		return "-"
	}
	return custody.FormatTime(*g.ExpiresAt)
}

// runGrantsRevoke revokes a grant and prints it:
//
//	custody grants revoke ID --reason TEXT [--operator ID] [--data DIR | --store URL]
func (m *Main) runGrantsRevoke(ctx context.Context, args []string) int {
	fs := m.flags("grants revoke", "ID --reason TEXT [--operator ID] [--data DIR | --store URL]")
	reason := fs.String("reason", "", "why the grant ends, recorded on the ledger; required")
	operator := fs.String("operator", m.env("CUSTODY_OPERATOR", ""), "operator `ID` revoking (env CUSTODY_OPERATOR); required")
	data := m.dataFlag(fs)
	store := m.storeFlag(fs)
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return m.flagUsage(fs, "name one grant")
	}
	if id == "" || *reason == "" || *operator == "" {
		return m.flagUsage(fs, "the grant ID, --reason and --operator are required")
	}
	gs, err := m.openGrants(*data, *store)
	if err != nil {
		return m.fail(err)
	}
	defer gs.db.Close()
	g, err := gs.svc.Revoke(ctx, id, *operator, *reason)
	if err != nil {
		return m.printError(err)
	}
	return m.printJSON(g)
}

// checkGrant is the approval service's grant check: a grant is checked
// against the gateway whose calls it would authorise.
func (s *stack) checkGrant(ctx context.Context, g custody.Grant) error {
	gw := s.gateway()
	if gw == nil {
		return custody.Errorf(custody.EUNAVAILABLE, "tool %q: the gateway is not built yet; try again", g.Tool)
	}
	return gw.CheckGrant(ctx, g)
}
