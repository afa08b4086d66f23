package mesh

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// composeFunc adapts a plain text generator (a fake model) into a
// Composer that checks its text and falls back to the template.
type composeFunc struct {
	Name     string
	Generate func(ctx context.Context, prompt string) (string, error)
}

// Compose generates a text and returns it when it passes check, else the
// template with the breach.
func (c composeFunc) Compose(ctx context.Context, prompt, template string, check func(string) error) Composed {
	text, err := c.Generate(ctx, prompt)
	if err != nil {
		return Composed{Text: template, Backend: "template", Breach: fmt.Errorf("%s: %w", c.Name, err)}
	}
	if err := check(text); err != nil {
		return Composed{Text: template, Backend: "template", Breach: err}
	}
	return Composed{Text: text, Backend: c.Name}
}

// fakeBackend always answers with the same text.
func fakeBackend(text string) Composer {
	return composeFunc{Name: "fake-model", Generate: func(context.Context, string) (string, error) { return text, nil }}
}

func TestInfoAdvisoryNeverMentionsFire(t *testing.T) {
	env := newEnv(t)
	fireTexts := []string{
		"Tier info: active fire spreading fast near the ridge, smoke everywhere.",
		"Tier info at the node. Evacuate now, flames are visible.",
		"Tier info. No fire, no smoke, all calm here today.",
		"Conditions are clear; ignition risk is nil.",
	}
	for _, text := range fireTexts {
		n, err := NewNode(NodeConfig{ID: "forward-ridge-1", Position: Position{MGRS: "11SKU1234567890"},
			Sensor: fixedSensor(clearReading(), Conditions{}), Composer: fakeBackend(text), Now: env.clock.Now, Wire: env.wire("forward-ridge-1")})
		if err != nil {
			t.Fatal(err)
		}
		adv, comp, err := n.Cycle(context.Background())
		if err != nil {
			t.Fatalf("cycle: %v", err)
		}
		if adv.DetectorState.Tier != Info {
			t.Fatalf("tier = %s, want info", adv.DetectorState.Tier)
		}
		if comp.Breach == nil || comp.Backend != "template" || adv.ComposerSignature.Model != "template" {
			t.Errorf("backend text %q was not refused: %+v", text, comp)
		}
		if err := advisoryGuard("info")(adv.AdvisoryText); err != nil {
			t.Errorf("sent info advisory %q: %v", adv.AdvisoryText, err)
		}
		for _, w := range []string{"fire", "smoke", "flame", "ignit", "evacu"} {
			if strings.Contains(strings.ToLower(adv.AdvisoryText), w) {
				t.Errorf("info advisory mentions %q: %q", w, adv.AdvisoryText)
			}
		}
	}
}

func TestComposerTextKeptWhenItPasses(t *testing.T) {
	env := newEnv(t)
	text := "Tier emergency at forward-ridge-2: active fire with dry, windy air."
	n, _ := NewNode(NodeConfig{ID: "forward-ridge-2", Position: Position{MGRS: "11SKU1234567890"}, Model: "gemma-4-E2B-it",
		Sensor: fixedSensor(fireReading(), Conditions{}), Composer: fakeBackend(text), Now: env.clock.Now, Wire: env.wire("forward-ridge-2")})
	adv, comp, err := n.Cycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if comp.Breach != nil || adv.AdvisoryText != text || adv.ComposerSignature.Model != "gemma-4-E2B-it" {
		t.Fatalf("got %q by %s (breach %v)", adv.AdvisoryText, adv.ComposerSignature.Model, comp.Breach)
	}
}

func TestComposerMayNotContradictTier(t *testing.T) {
	tests := []struct {
		name string
		r    SensorReading
		text string
	}{
		{"UnderstatesEmergency", fireReading(), "Tier info: conditions are calm everywhere today."},
		{"OverstatesWarning", hotReading(), "Tier warning, in fact emergency: hot spot growing."},
		{"OmitsTier", hotReading(), "A hot spot was detected near the node today."},
	}
	env := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, _ := NewNode(NodeConfig{ID: "forward-ridge-3", Position: Position{MGRS: "11SKU1234567890"},
				Sensor: fixedSensor(tt.r, Conditions{}), Composer: fakeBackend(tt.text), Now: env.clock.Now})
			adv, comp, err := n.Cycle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if comp.Breach == nil || adv.AdvisoryText == tt.text {
				t.Fatalf("contradicting text kept: %q", adv.AdvisoryText)
			}
		})
	}
}

func TestAdvisoryNamesAbsentSensor(t *testing.T) {
	env := newEnv(t)
	r := clearReading()
	r.HumidityPct = nil
	n, _ := NewNode(NodeConfig{ID: "forward-ridge-4", Position: Position{MGRS: "11SKU1234567890"},
		Sensor: fixedSensor(r, Conditions{}), Composer: fakeBackend("Tier info at the node: conditions clear."), Now: env.clock.Now, Wire: env.wire("forward-ridge-4")})
	adv, comp, err := n.Cycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if comp.Breach == nil || !strings.Contains(adv.AdvisoryText, "humidity_pct") {
		t.Fatalf("advisory %q does not name the absent humidity sensor", adv.AdvisoryText)
	}
}

func TestAdvisoryOverflowComposedShorter(t *testing.T) {
	env := newEnv(t)
	// An adapter id of control characters takes six bytes a character on
	// the wire, leaving little room under 2 KB for the text.
	adapter := strings.Repeat("\x01", 200)
	long := "Tier emergency: " + strings.Repeat("é", 700)
	r := fireReading()
	n, _ := NewNode(NodeConfig{ID: "forward-" + strings.Repeat("x", 56), Position: Position{MGRS: strings.Repeat("1", 32), Lat: Float(34), Lon: Float(-118), UncertaintyM: Float(5)},
		Sensor: fixedSensor(r, Conditions{RFWActive: Bool(true), WFIGSProximityKM: Float(1.5)}), Composer: fakeBackend(long),
		Adapter: &adapter, Now: env.clock.Now, Wire: env.wire("forward-" + strings.Repeat("x", 56))})
	adv, raw, comp, err := n.Advise(context.Background(), env.clock.Now(), r, Conditions{RFWActive: Bool(true), WFIGSProximityKM: Float(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > maxMessageBytes {
		t.Fatalf("advisory is %d bytes", len(raw))
	}
	if comp.Breach == nil {
		t.Fatalf("a %d-byte text was kept", len(long))
	}
	full := advisoryTemplates(n.ID(), n.cfg.Position, r, assess(r, Conditions{RFWActive: Bool(true), WFIGSProximityKM: Float(1.5)}))[0]
	if utf8.RuneCountInString(adv.AdvisoryText) >= utf8.RuneCountInString(full) {
		t.Fatalf("text was not shortened: %q", adv.AdvisoryText)
	}
	if err := env.reg.Validate(advisoryRef, raw); err != nil {
		t.Fatalf("shortened advisory fails its contract: %v", err)
	}
	if _, _, err := n.Cycle(context.Background()); err != nil {
		t.Fatalf("send: %v", err)
	}
}
