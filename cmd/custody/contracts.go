package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/custody-dev/custody/contract"
)

// runContracts lists the loaded contracts, then every named schema with
// its canonical URI, as aligned tables.
func (m *Main) runContracts(ctx context.Context, args []string) int {
	fs := m.flags("contracts", "[--contracts DIR]")
	load := m.registry(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(m.Stderr, "custody contracts: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	reg, err := load()
	if err != nil {
		return m.loadFailed(err)
	}
	if err := m.printContracts(reg); err != nil {
		fmt.Fprintf(m.Stderr, "custody contracts: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func (m *Main) printContracts(reg *contract.Registry) error {
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTRACT\tSCHEMAS\tFILE\tTITLE")
	for _, c := range reg.Contracts() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c.ID, c.Schemas, c.File, c.Title)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write contracts: %w", err)
	}
	fmt.Fprintln(m.Stdout)
	tw = tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tURI")
	for _, n := range reg.Named() {
		fmt.Fprintf(tw, "%s\t%s\n", n.Name, n.URI)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write schema names: %w", err)
	}
	return nil
}
