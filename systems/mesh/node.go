package mesh

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// Advisory text limits of the contract.
const (
	advisoryMinChars = 20
	advisoryMaxChars = 800
)

var nodeIDRE = regexp.MustCompile(`^forward-[A-Za-z0-9-]+$`)

// validNodeID reports whether id is a forward node id of the contract.
func validNodeID(id string) bool {
	return len(id) >= 9 && len(id) <= 64 && nodeIDRE.MatchString(id) && !strings.HasSuffix(id, "-")
}

// Sensor reads a forward node's instruments once per cycle.
type Sensor interface {
	// Read returns this cycle's reading and the node's conditions. A
	// sensor that gave nothing is left nil in the reading.
	Read(ctx context.Context, now time.Time) (SensorReading, Conditions, error)
}

// SensorFunc adapts a function into a Sensor.
type SensorFunc func(ctx context.Context, now time.Time) (SensorReading, Conditions, error)

// Read calls f.
func (f SensorFunc) Read(ctx context.Context, now time.Time) (SensorReading, Conditions, error) {
	return f(ctx, now)
}

// NodeConfig configures a forward node.
type NodeConfig struct {
	ID       string
	Position Position
	Sensor   Sensor
	// Composer words the advisory; template when nil.
	Composer Composer
	// Model and Adapter sign the composer (mesh_composer_signature);
	// Model defaults to the backend's name.
	Model   string
	Adapter *string
	// Wire sends the advisories; nil composes without sending.
	Wire     *Wire
	Subjects Subjects
	Now      func() time.Time
}

// Node is a forward node: each cycle it reads its sensors, runs the
// deterministic rule, composes and publishes one advisory.
type Node struct {
	cfg NodeConfig
}

// NewNode returns a node; EINVALID when its id or position is not one the
// contract accepts.
func NewNode(cfg NodeConfig) (*Node, error) {
	if !validNodeID(cfg.ID) {
		return nil, custody.Errorf(custody.EINVALID, "node id %q must match forward-[A-Za-z0-9-]+ (9-64 characters)", cfg.ID)
	}
	if n := len(cfg.Position.MGRS); n < 4 || n > 32 {
		return nil, custody.Errorf(custody.EINVALID, "node %s: MGRS position %q must be 4-32 characters", cfg.ID, cfg.Position.MGRS)
	}
	if cfg.Composer == nil {
		cfg.Composer = template{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sensor == nil {
		return nil, custody.Errorf(custody.EINVALID, "node %s has no sensor", cfg.ID)
	}
	if id := wireIdentity(cfg.Wire); id != nil && (id.Role != RoleNode || id.Name != cfg.ID) {
		return nil, custody.Errorf(custody.EINVALID, "node %s cannot sign with the key of %s %q", cfg.ID, id.Role, id.Name)
	}
	return &Node{cfg: cfg}, nil
}

// ID returns the node id.
func (n *Node) ID() string { return n.cfg.ID }

// Cycle runs one cycle: read, assess, compose, send. It returns the
// advisory sent and how its text was composed.
func (n *Node) Cycle(ctx context.Context) (Advisory, Composed, error) {
	now := n.cfg.Now()
	r, c, err := n.cfg.Sensor.Read(ctx, now)
	if err != nil {
		return Advisory{}, Composed{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "read sensors of " + n.cfg.ID, Err: err}
	}
	adv, raw, comp, err := n.Advise(ctx, now, r, c)
	if err != nil {
		return adv, comp, err
	}
	if n.cfg.Wire == nil {
		return adv, comp, nil
	}
	err = n.cfg.Wire.Send(ctx, kindAdvisory, n.cfg.Subjects.Advisory(n.cfg.ID), raw, map[string]string{"node_id": n.cfg.ID})
	return adv, comp, err
}

// Advise builds the advisory for one reading: the rule decides the tier,
// the composer words it under the guard, and the text is composed shorter
// whenever the message would pass maxMessageBytes.
func (n *Node) Advise(ctx context.Context, now time.Time, r SensorReading, c Conditions) (Advisory, []byte, Composed, error) {
	a := assess(r, c)
	adv := Advisory{
		SchemaVersion: advisoryVersion,
		NodeID:        n.cfg.ID,
		Position:      n.cfg.Position,
		ObservationTS: now.UTC().Format(time.RFC3339),
		SensorReading: r,
		DetectorState: a.State,
		ComposerSignature: ComposerSignature{
			Model:   "template",
			Adapter: n.cfg.Adapter,
		},
	}
	budget, err := textBudget(&adv)
	if err != nil {
		return adv, nil, Composed{}, err
	}
	check := advisoryCheck(a, budget)
	tmpl := firstFitting(advisoryTemplates(n.cfg.ID, n.cfg.Position, r, a), check)
	if tmpl == "" {
		return adv, nil, Composed{}, custody.Errorf(custody.EINVALID, "advisory of %s cannot fit %d bytes", n.cfg.ID, maxMessageBytes)
	}
	comp := n.cfg.Composer.Compose(ctx, advisoryPrompt(n.cfg.ID, a, r), tmpl, check)
	adv.AdvisoryText = comp.Text
	adv.ComposerSignature.Model = n.model(comp)
	raw, err := marshal(adv)
	if err != nil {
		return adv, nil, comp, err
	}
	return adv, raw, comp, nil
}

func (n *Node) model(c Composed) string {
	if c.Backend == "template" || n.cfg.Model == "" {
		return c.Backend
	}
	return n.cfg.Model
}

// textBudget returns how many bytes the advisory text may take: the
// message limit less everything else, with room for the longest model
// name.
func textBudget(adv *Advisory) (int, error) {
	probe := *adv
	probe.AdvisoryText = ""
	probe.ComposerSignature.Model = strings.Repeat("m", 96)
	raw, err := marshal(probe)
	if err != nil {
		return 0, err
	}
	return maxMessageBytes - len(raw), nil
}

// advisoryCheck is the check every advisory text passes: the R4 guard
// for its tier, every absent sensor named, and the size limits.
func advisoryCheck(a Assessment, budget int) func(string) error {
	tierCheck := advisoryGuard(string(a.State.Tier))
	return func(text string) error {
		if err := fitText(text, advisoryMinChars, advisoryMaxChars, budget); err != nil {
			return custody.Errorf(custody.EINVALID, "advisory text: %v", err)
		}
		if err := tierCheck(text); err != nil {
			return err
		}
		for _, s := range a.Missing {
			if !strings.Contains(text, s) {
				return custody.Errorf(custody.EINVALID, "advisory text does not say that %s is absent", s)
			}
		}
		return nil
	}
}

// advisoryTemplates returns the deterministic texts, longest first.
func advisoryTemplates(id string, pos Position, r SensorReading, a Assessment) []string {
	head := fmt.Sprintf("Tier %s at %s (%s)", a.State.Tier, id, pos.MGRS)
	absent := ""
	if len(a.Missing) > 0 {
		absent = " Sensors absent: " + strings.Join(a.Missing, ", ") + "."
	}
	full := head + ": " + describe(r, a) + "." + absent
	short := head + ": " + factorList(a) + "." + absent
	return []string{full, short, "Tier " + string(a.State.Tier) + " at " + id + "." + absent}
}

// describe words the factors and readings of an assessment. At info it
// uses no hazard vocabulary at all.
func describe(r SensorReading, a Assessment) string {
	var parts []string
	if a.State.Tier == Info {
		parts = append(parts, "conditions clear")
	} else {
		parts = append(parts, factorList(a))
	}
	if v := r.ThermalMaxC; v != nil {
		parts = append(parts, fmt.Sprintf("thermal max %.0f C over %.1f m2", *v, deref(r.ThermalAreaM2)))
	}
	if v := r.HumidityPct; v != nil {
		parts = append(parts, fmt.Sprintf("humidity %.0f%%", *v))
	}
	if v := r.WindSpeedMS; v != nil {
		parts = append(parts, fmt.Sprintf("wind %.1f m/s", *v))
	}
	if v := r.WindGustMS; v != nil {
		parts = append(parts, fmt.Sprintf("gusts %.1f m/s", *v))
	}
	return strings.Join(parts, "; ")
}

// factorList names the factors behind a tier above info.
func factorList(a Assessment) string {
	var f []string
	switch {
	case a.ActiveFire:
		f = append(f, "active fire detected")
	case a.HotSpot:
		f = append(f, "hot spot detected")
	}
	if a.FireWeather {
		f = append(f, "fire weather")
	}
	if a.RFW {
		f = append(f, "Red Flag Warning active")
	}
	if a.NearPerimeter {
		f = append(f, fmt.Sprintf("within %.1f km of an active WFIGS perimeter, tier raised from %s", *a.State.WFIGSProximityKM, a.Base))
	}
	if len(f) == 0 {
		return "conditions clear"
	}
	return strings.Join(f, ", ")
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// advisoryPrompt asks a model to word the decided state, and no more.
func advisoryPrompt(id string, a Assessment, r SensorReading) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write one short plain-language advisory for forward node %s. The deterministic detector decided tier %q; ", id, a.State.Tier)
	fmt.Fprintf(&b, "state that tier in the text and never contradict it. Facts: %s.", describe(r, a))
	if a.State.Tier == Info {
		b.WriteString(" The tier is info: do not mention fire, smoke, flames, ignition or evacuation at all.")
	}
	if len(a.Missing) > 0 {
		fmt.Fprintf(&b, " Say that these sensors are absent: %s.", strings.Join(a.Missing, ", "))
	}
	return b.String()
}
