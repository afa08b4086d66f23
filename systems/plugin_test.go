package systems_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/assure"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/peas"
)

func settings(names ...string) systems.Settings {
	return systems.Settings{Systems: names, LLM: "template", Getenv: func(string) string { return "" },
		Stderr: io.Discard, Logger: slog.New(slog.DiscardHandler)}
}

// TestServeOnlyWhenAsked: a system not named serves nothing.
func TestServeOnlyWhenAsked(t *testing.T) {
	for _, s := range []systems.System{peas.Plugin{}, mesh.Plugin{}, brain.Plugin{}, assure.Plugin{}} {
		served, err := s.Serve(context.Background(), settings())
		if err != nil || served.Title != "" || served.Tools != nil || served.Attach != nil || served.Run != nil || served.Close != nil {
			t.Errorf("%s, not asked: %+v, %v", s.Name(), served, err)
		}
	}
}

// TestServeRefusals: a system asked for without what it needs says what
// is missing.
func TestServeRefusals(t *testing.T) {
	cases := map[string]struct {
		sys  systems.System
		set  systems.Settings
		want string
	}{
		"BrainWithoutRoom": {brain.Plugin{}, settings("brain"), "needs --room"},
		"AssureServed":     {assure.Plugin{}, settings("assure"), "custody assure"},
		"PeasBadLLM":       {peas.Plugin{}, func() systems.Settings { s := settings("peas"); s.LLM = "carrier-pigeon://x"; return s }(), "carrier-pigeon"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := c.sys.Serve(context.Background(), c.set); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestPeasServesItsTools: asked for, peas brings its five tools, runs its
// feed only when simulated, and closes cleanly.
func TestPeasServesItsTools(t *testing.T) {
	served, err := peas.Plugin{}.Serve(context.Background(), settings("peas"))
	if err != nil {
		t.Fatal(err)
	}
	if len(served.Tools) != 5 || served.Attach == nil || served.Run != nil || served.Title == "" {
		t.Errorf("served %d tools, attach %v, run %v, title %q", len(served.Tools), served.Attach != nil, served.Run != nil, served.Title)
	}
	if err := served.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
	set := settings("peas")
	set.Simulate = true
	if served, err = (peas.Plugin{}).Serve(context.Background(), set); err != nil || served.Run == nil {
		t.Errorf("simulated: run %v, %v", served.Run != nil, err)
	}
}

// TestMeshChecksNothingBeforeAttach: an approval asked about before the
// mesh is attached is not the mesh's to judge.
func TestMeshChecksNothingBeforeAttach(t *testing.T) {
	served, err := mesh.Plugin{}.Serve(context.Background(), settings("mesh"))
	if err != nil {
		t.Fatal(err)
	}
	err = served.CheckApproval(context.Background(), custody.Approval{Tool: "broadcast"})
	if !errors.Is(err, approval.ErrNoContract) {
		t.Errorf("err = %v, want ErrNoContract", err)
	}
}

// TestMeshOverNATSNeedsADialer: a mesh plugin built without a NATS
// transport refuses to join over NATS, and Names refuses a store with no
// ledger id when no names are given.
func TestMeshOverNATSNeedsADialer(t *testing.T) {
	set := settings("mesh")
	set.NATS = "nats://127.0.0.1:1"
	if _, err := (mesh.Plugin{}).Deps(systems.Core{}, set); err == nil || !strings.Contains(err.Error(), "cannot join the mesh over NATS") {
		t.Errorf("err = %v", err)
	}
	if _, err := mesh.Names("", config.Mesh{}); err == nil {
		t.Error("names without a ledger id were accepted")
	}
}

// TestSeedCommands: every seed system brings its CLI, each command
// named, summarised and runnable; peas and mesh bring a demo.
func TestSeedCommands(t *testing.T) {
	want := map[string][]string{"peas": {"peas", "demo peas"}, "mesh": {"mesh", "demo mesh"}, "brain": {"brain"}, "assure": {"assure"}}
	for _, s := range []systems.System{peas.Plugin{}, mesh.Plugin{}, brain.Plugin{}, assure.Plugin{}} {
		var names []string
		for _, c := range s.Commands() {
			names = append(names, c.Name)
			if c.Summary == "" || c.Run == nil {
				t.Errorf("%s: command %q has no summary or no Run", s.Name(), c.Name)
			}
		}
		if strings.Join(names, ",") != strings.Join(want[s.Name()], ",") {
			t.Errorf("%s: commands %q, want %q", s.Name(), names, want[s.Name()])
		}
	}
}
