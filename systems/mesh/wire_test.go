package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// numberVariants are advisories with numbers at the edges of the number
// rules of strict JSON, which the contract and the ledger both refuse
// (want false) or both accept (want true).
func numberVariants(raw []byte) []struct {
	name string
	raw  []byte
	ok   bool
} {
	pixels := func(lit string) []byte {
		return bytes.Replace(raw, []byte(`"sensor_reading":{`), []byte(`"sensor_reading":{"thermal_anomaly_pixels":`+lit+`,`), 1)
	}
	ambient := func(lit string) []byte {
		return bytes.Replace(raw, []byte(`"ambient_c":21`), []byte(`"ambient_c":`+lit), 1)
	}
	return []struct {
		name string
		raw  []byte
		ok   bool
	}{
		{"IntegerBeyond2^53", pixels("9007199254740993"), false},
		{"Integer2^53", pixels("9007199254740992"), true},
		{"Integer15Digits", pixels("999999999999999"), true},
		{"HugeInteger", pixels("123456789012345678901234567890"), false},
		{"IntegralDouble", ambient("1e20"), false},
		{"IntegralDoubleFraction", ambient("100000000000000000.0"), false},
		{"NegativeIntegerBeyond2^53", ambient("-9007199254740993"), false},
		{"BeyondDouble", ambient("1e400"), false},
		{"NegativeBeyondDouble", ambient("-1.5E+309"), false},
		{"SmallExponent", ambient("2.1e1"), true},
		{"LongFraction", ambient("21.00000000000000000000000000001"), true},
		{"Tiny", ambient("1e-400"), true},
		{"Double1e21", ambient("1e21"), true},
		{"NegativeZero", ambient("-0"), true},
		{"Digit16Fraction", ambient("1234567890123456.5"), true},
	}
}

// TestCheckRefusesWhatTheLedgerRefuses checks that the contract and the
// ledger agree on every number variant, and that Wire.Check, which leaves
// the strict-JSON checks to the contract and checks only numbers itself,
// refuses exactly the messages canonical JSON refuses.
func TestCheckRefusesWhatTheLedgerRefuses(t *testing.T) {
	env := newEnv(t)
	w := env.wire("aggregator")
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	if !bytes.Contains(raw, []byte(`"ambient_c":21`)) {
		t.Fatalf("fixture changed: %s", raw)
	}
	type variant struct {
		name string
		raw  []byte
	}
	var all []variant
	for _, v := range numberVariants(raw) {
		if err := env.reg.Validate(advisoryRef, v.raw); (err == nil) != v.ok {
			t.Fatalf("%s: the contract's error = %v, want accepted = %v, as the ledger", v.name, err, v.ok)
		}
		if got := ledger.Check(v.raw) == nil; got != v.ok {
			t.Fatalf("%s: ledger.Check ok = %v, want %v", v.name, got, v.ok)
		}
		all = append(all, variant{v.name, v.raw})
	}
	text := []byte(`"advisory_text":"`)
	for name, r := range map[string][]byte{
		"DuplicateKey":        append(raw[:len(raw)-1:len(raw)-1], `,"node_id":"forward-ridge-1"}`...),
		"EscapedDuplicateKey": append(raw[:len(raw)-1:len(raw)-1], `,"node\u005fid":"forward-ridge-1"}`...),
		"LoneSurrogate":       bytes.Replace(raw, text, append(text, `\ud800 `...), 1),
		"PairedSurrogates":    bytes.Replace(raw, text, append(text, `\ud83d\udd25 `...), 1),
		"InvalidUTF8":         bytes.Replace(raw, text, append(text, 0xff, ' '), 1),
		"ControlCharacter":    bytes.Replace(raw, text, append(text, 0x01, ' '), 1),
		"EscapedQuoteDigits":  bytes.Replace(raw, text, append(text, `\"9007199254740993\" `...), 1),
		"TrailingData":        append(raw[:len(raw):len(raw)], ` 1`...),
		"Whitespace":          append([]byte(" \n"), append(raw[:len(raw):len(raw)], '\n')...),
	} {
		all = append(all, variant{name, r})
	}
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			err := w.Check(kindAdvisory, v.raw)
			if lerr := ledger.Check(v.raw); lerr != nil && err == nil {
				t.Fatalf("Check accepts what the ledger refuses (%v)", lerr)
			}
			if err != nil && custody.ErrorKind(err) != custody.EINVALID {
				t.Fatalf("kind = %s (%v)", custody.ErrorKind(err), err)
			}
			var se *ledger.SyntaxError
			if errors.As(err, &se) && (se.Offset < 0 || se.Offset >= len(v.raw)) {
				t.Fatalf("offset %d outside the message", se.Offset)
			}
		})
	}
}

// TestBigIntegerAdvisoryRefusedOnReceive checks that an advisory the
// ledger cannot record exactly is refused and recorded as refused, never
// received or ingested.
func TestBigIntegerAdvisoryRefusedOnReceive(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	n := 0
	for _, v := range numberVariants(raw) {
		_, err := a.Receive(context.Background(), env.signed("forward-ridge-1", "mesh.advisory.forward-ridge-1", v.raw))
		if v.ok {
			continue // accepted by both; may be refused later for other reasons
		}
		n++
		if k := custody.ErrorKind(err); k != custody.EINVALID {
			t.Fatalf("%s: kind = %q (%v), want invalid", v.name, k, err)
		}
		if got := len(env.entries(t, EntryRefused, nil)); got != n {
			t.Fatalf("%s: %d refusals recorded, want %d", v.name, got, n)
		}
	}
	if got := len(env.entries(t, EntryReceived, nil)); got != len(numberVariants(raw))-n {
		t.Fatalf("%d received, want %d", got, len(numberVariants(raw))-n)
	}
	if s := a.Stats(); s.Refused != int64(n) {
		t.Fatalf("stats %+v, want %d refused", s, n)
	}
}

// TestReceivedRefusesWhatTheLedgerRefuses checks the second line of
// defence: a message the ledger will not record as received is recorded
// as refused.
func TestReceivedRefusesWhatTheLedgerRefuses(t *testing.T) {
	env := newEnv(t)
	w := env.wire("aggregator")
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	big := numberVariants(raw)[0]
	err := w.Received(context.Background(), kindAdvisory, "mesh.advisory.forward-ridge-1", big.raw, map[string]string{"node_id": "forward-ridge-1"})
	if k := custody.ErrorKind(err); k != custody.EINVALID {
		t.Fatalf("kind = %q (%v), want invalid", k, err)
	}
	if e := custody.AsError(err); e.Receipt == nil {
		t.Fatal("refusal carries no receipt")
	}
	if len(env.entries(t, EntryRefused, nil)) != 1 || len(env.entries(t, EntryReceived, nil)) != 0 {
		t.Fatal("not recorded as refused")
	}
}

// TestDecodeAdvisoryMatchesEncodingJSON checks decodeAdvisory against
// encoding/json on advisories and on shapes its reader leaves to
// encoding/json.
func TestDecodeAdvisoryMatchesEncodingJSON(t *testing.T) {
	env := newEnv(t)
	var docs [][]byte
	c := Conditions{RFWActive: Bool(true), WFIGSProximityKM: Float(3.25)}
	partial := clearReading()
	partial.HumidityPct, partial.WindGustMS = nil, nil
	for _, r := range []SensorReading{clearReading(), fireReading(), hotReading(), partial, {}} {
		for _, cond := range []Conditions{{}, c} {
			adv, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", r, cond)
			docs = append(docs, raw)
			adv.ComposerSignature.Adapter = new(string)
			adv.ComposerSignature.WallS = Float(0.125)
			adv.Position.UncertaintyM = Float(7)
			adv.SensorReading.ThermalAnomalyPixels = new(int)
			adv.AdvisoryText += ` "quoted" \ tab	é 🔥 <&> ` + "\u2028"
			b, err := json.Marshal(adv)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b)
		}
	}
	for _, doc := range docs {
		r := advReader{in: doc}
		if !r.advisory(new(Advisory)) {
			t.Fatalf("%s: the reader leaves an advisory to encoding/json", doc)
		}
	}
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	s := string(raw)
	for _, edit := range [][2]string{
		{`"ambient_c":21`, `"ambient_c":null`},
		{`"ambient_c":21`, `"ambient_c":2.1E+1`},
		{`"ambient_c":21`, `"ambient_c":-0`},
		{`"ambient_c":21`, `"ambient_c":1e400`},
		{`"ambient_c":21`, `"ambient_c":021`},
		{`"ambient_c":21`, `"ambient_c":+21`},
		{`"ambient_c":21`, `"ambient_c":21.`},
		{`"ambient_c":21`, `"ambient_c":"21"`},
		{`"sensor_reading":{`, `"sensor_reading":{"thermal_anomaly_pixels":1.0,`},
		{`"sensor_reading":{`, `"sensor_reading":{"thermal_anomaly_pixels":99999999999999999999,`},
		{`"sensor_reading":{`, `"sensor_reading":{"thermal_anomaly_pixels":-3,`},
		{`"sensor_reading":{`, `"sensor_reading":{"ambient_c":5,`},
		{`"sensor_reading":{`, `"sensor_reading":{"Ambient_C":5,`},
		{`"sensor_reading":{`, `"sensor_reading":{"extra":5,`},
		{`"node_id"`, `"node\u005fid"`},
		{`"node_id"`, `"NODE_ID"`},
		{`"detector_state":{`, `"detector_state":{"rfw_active":false,`},
		{`"detector_state":{`, `"detector_state":{"rfw_active":null,`},
		{`"detector_state":{`, `"detector_state":{"rfw_active":truex,`},
		{`"composer_signature":{`, `"composer_signature":{"adapter":null,`},
		{`"composer_signature":{`, `"composer_signature":{"adapter":"lora\n1",`},
		{`"position":{`, `"position": { "uncertainty_m" : 1 , `},
		{`"advisory_text":"`, `"advisory_text":"\ud800 `},
		{`"advisory_text":"`, "\"advisory_text\":\"\xff "},
		{`"advisory_text":"`, "\"advisory_text\":\"\x01 "},
		{`"position":{`, `"position":[],"p":{`},
		{`}}`, `},}}`},
		{`"schema_version":"`, `"schema_version":"\"`},
	} {
		if !strings.Contains(s, edit[0]) {
			t.Fatalf("fixture lacks %s", edit[0])
		}
		docs = append(docs, []byte(strings.Replace(s, edit[0], edit[1], 1)))
	}
	docs = append(docs, []byte(s+" "), []byte(s+"x"), []byte(s+"{}"), []byte(" "+s), []byte(s[:len(s)-1]), []byte("null"), []byte("{}"), nil)
	for _, doc := range docs {
		var want Advisory
		werr := json.Unmarshal(doc, &want)
		got, err := decodeAdvisory(doc)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: err = %v, encoding/json %v", doc, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", doc, got, want)
		}
		if err != nil && custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("%s: kind = %s", doc, custody.ErrorKind(err))
		}
	}
}

// anyValidator accepts every document: a Validator that reads numbers
// otherwise than the ledger, for TestCheckNumbersWhateverTheValidator.
type anyValidator struct{}

func (anyValidator) Validate(string, []byte) error { return nil }

// TestCheckNumbersWhateverTheValidator checks that Wire.Check holds a
// message to the number rules itself, so that a Validator that lets a
// number through cannot make the mesh send what the ledger will not
// record.
func TestCheckNumbersWhateverTheValidator(t *testing.T) {
	env := newEnv(t)
	w := env.wire("aggregator")
	w.Validator = anyValidator{}
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	for _, v := range numberVariants(raw) {
		err := w.Check(kindAdvisory, v.raw)
		if (err == nil) != v.ok {
			t.Errorf("%s: Check error = %v, want accepted = %v", v.name, err, v.ok)
		}
		var se *ledger.SyntaxError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: error %v carries no *ledger.SyntaxError", v.name, err)
		}
	}
}
