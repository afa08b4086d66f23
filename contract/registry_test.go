package contract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
)

const (
	peasID  = "https://peas.local/schemas/v0/tools.json"
	brainID = "https://mindrian-os.com/schemas/brain-packet/1.0"
	caeID   = "https://dashfin.org/schemas/df-clinical-action-envelope-v0.1.schema.json"
)

func mustLoad(t testing.TB, opts Options) *Registry {
	t.Helper()
	r, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// asError returns err as a *custody.Error, failing the test otherwise.
func asError(t *testing.T, err error) *custody.Error {
	t.Helper()
	var e *custody.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *custody.Error", err, err)
	}
	return e
}

func TestLoadSeeds(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	want := map[string]int{peasID: 23, brainID: 24, caeID: 1}
	got := r.Contracts()
	if len(got) != len(want) {
		t.Fatalf("got %d contracts, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		if c.Schemas != want[c.ID] || c.Title == "" {
			t.Errorf("contract %s: %d schemas, title %q; want %d and a title", c.ID, c.Schemas, c.Title, want[c.ID])
		}
	}
	if n := len(r.Named()); n != 48 {
		t.Errorf("got %d named schemas, want 48", n)
	}
}

func TestNamedSchemas(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	named := map[string]string{}
	for _, n := range r.Named() {
		named[n.Name] = n.URI
	}
	tests := map[string]string{
		"peas:detect_pileup_signature/input": peasID + "#/tools/0/input",
		"peas:issue_vms_update/input":        peasID + "#/tools/3/input",
		"peas:notify_driver/output":          peasID + "#/tools/4/output",
		"peas:signature":                     peasID + "#/$defs/signature",
		"peas:peas_mesh_advisory_v1":         peasID + "#/$defs/peas_mesh_advisory_v1",
		"peas:iso_timestamp":                 peasID + "#/$defs/iso_timestamp",
		"brain:suggest_next_move/in":         brainID + "#/$defs/suggest_next_move/in",
		"brain:opportunity_rank/out":         brainID + "#/$defs/opportunity_rank/out",
		"cae:envelope":                       caeID + "#",
	}
	for name, uri := range tests {
		if named[name] != uri {
			t.Errorf("%s: listed as %q, want %q", name, named[name], uri)
		}
	}
	for name, uri := range named {
		if got, err := r.Resolve(name); err != nil || got != uri {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, uri)
		}
		if got, err := r.Resolve(uri); err != nil || got != uri {
			t.Errorf("Resolve(%q) = %q, %v; want itself", uri, got, err)
		}
		if _, err := r.schema(uri); err != nil {
			t.Errorf("%s does not compile: %v", name, err)
		}
	}
}

func TestEmbeddedContractsAreSeeds(t *testing.T) {
	seedDir := sharedDir(t, "seeds")
	tests := []struct {
		id, seed string
		skip     int // bytes before the JSON in the seed file
	}{
		{peasID, "000_adbedca26af08670.txt", len("schemas.json\n\n")},
		{brainID, "002_ad30d7b73ccf68b1.txt", 0},
		{caeID, "003_89b3f9ba2a8b89f8.txt", 0},
	}
	r := mustLoad(t, Options{Contracts: seeds(t)})
	for _, tc := range tests {
		seed, err := os.ReadFile(filepath.Join(seedDir, tc.seed))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := r.Document(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if string(doc) != string(seed[tc.skip:]) {
			t.Errorf("%s differs from seed %s", tc.id, tc.seed)
		}
	}
	if _, err := r.Document("https://example.test/none"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Errorf("Document(unknown) = %v, want ENOTFOUND", err)
	}
}

func TestResolve(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	tests := []struct {
		name, ref, want, wantKind string
	}{
		{"OKShortName", "peas:issue_vms_update/input", peasID + "#/tools/3/input", ""},
		{"OKPointer", peasID + "#/tools/3/input", peasID + "#/tools/3/input", ""},
		{"OKUnnamedPointer", peasID + "#/tools/3/input/properties/duration_s", peasID + "#/tools/3/input/properties/duration_s", ""},
		{"OKPercentEncoded", brainID + "#/%24defs/suggest_next_move/in", brainID + "#/$defs/suggest_next_move/in", ""},
		{"OKRootWithoutFragment", caeID, caeID + "#", ""},
		{"OKRootEmptyFragment", caeID + "#", caeID + "#", ""},
		{"ErrUnknownName", "peas:nope", "", custody.ENOTFOUND},
		{"ErrUnknownContract", "https://example.test/x.json#/a", "", custody.ENOTFOUND},
		{"ErrMissingPointer", peasID + "#/tools/9/input", "", custody.ENOTFOUND},
		{"ErrNotSchema", peasID + "#/tools/0/name", "", custody.ENOTFOUND},
		{"ErrAnchorFragment", peasID + "#anchor", "", custody.ENOTFOUND},
		{"ErrLeadingZeroIndex", peasID + "#/tools/03/input", "", custody.ENOTFOUND},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(tc.ref)
			if kind := custody.ErrorKind(err); kind != tc.wantKind {
				t.Fatalf("Resolve(%q) error %v, want kind %q", tc.ref, err, tc.wantKind)
			}
			if got != tc.want {
				t.Errorf("Resolve(%q) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}

func TestUnknownRefSuggestsContracts(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	err := r.Validate("peas:nope", []byte(`{}`))
	e := asError(t, err)
	if e.Kind != custody.ENOTFOUND || !strings.Contains(e.Message, `"peas:nope"`) || !strings.Contains(e.Message, "custody contracts") {
		t.Errorf("got %v; want ENOTFOUND naming the ref and suggesting 'custody contracts'", err)
	}
}

// violationWant is what a refusal must report; empty fields are not checked.
type violationWant struct {
	instance, keyword, message string
}

func TestValidate(t *testing.T) {
	advisory := string(readTestdata(t, "advisory.json"))
	vms := string(readTestdata(t, "vms_update.json"))
	const notified = `{"notification_id": "3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f", "delivered_at": %q,
		"warning_text_shown": "Pile-up ahead, slow down", "audio_uri": %q,
		"reasoning": "Detector tier critical at MM85 EB; approval granted by operator."}`
	tests := []struct {
		name, ref, doc string
		wantKind       string
		want           []violationWant
	}{
		{"OKAdvisory", "peas:peas_mesh_advisory_v1", advisory, "", nil},
		{"OKVMSUpdate", "peas:issue_vms_update/input", vms, "", nil},
		{"OKNotified", "peas:notify_driver/output", fmt.Sprintf(notified, "2026-08-14T21:04:00.25+02:00", "https://cdn.example/a%20b.mp3"), "", nil},
		{"OKIntegerWithFraction", "peas:issue_vms_update/input", strings.Replace(vms, "900", "900.0", 1), "", nil},
		{"ErrLargeInteger", "peas:mesh_sensor_reading", `{"thermal_anomaly_pixels": 123456789012345678901234567890}`, custody.EINVALID,
			[]violationWant{{"/thermal_anomaly_pixels", "", "beyond ±2^53"}}},
		{"ErrIntegralDoubleBeyond2p53", "peas:mesh_sensor_reading", `{"thermal_anomaly_pixels": 1e20}`, custody.EINVALID,
			[]violationWant{{"/thermal_anomaly_pixels", "", "beyond ±2^53"}}},
		{"ErrMinimumPrecision", "peas:mesh_detector_state", `{"tier": "info", "rule_signature": "rule", "wfigs_proximity_km": -0.000000000000000000001}`, custody.EINVALID,
			[]violationWant{{"/wfigs_proximity_km", "", "minimum"}}},
		{"ErrExtraField", "peas:issue_vms_update/input", strings.Replace(vms, `{`, `{"transcript": "x", `, 1), custody.EINVALID,
			[]violationWant{{"", peasID + "#/tools/3/input/additionalProperties", `additional property "transcript" is not allowed`}}},
		{"ErrMissingField", "peas:issue_vms_update/input", `{"billboard_id": "B", "message": "SLOW DOWN"}`, custody.EINVALID,
			[]violationWant{{"", peasID + "#/tools/3/input/required", `missing required property "approval_request_id"`}}},
		{"ErrWrongType", "peas:issue_vms_update/input", strings.Replace(vms, "900", `"900"`, 1), custody.EINVALID,
			[]violationWant{{"/duration_s", peasID + "#/tools/3/input/properties/duration_s/type", "got string, want integer"}}},
		{"ErrPattern", "peas:issue_vms_update/input", strings.Replace(vms, "3f1c2a9e", "3f1c2a9", 1), custody.EINVALID,
			[]violationWant{{"/approval_request_id", peasID + "#/$defs/uuid_v4/pattern", "does not match pattern"}}},
		{"ErrRootType", "brain:suggest_next_move/in", "[]", custody.EINVALID,
			[]violationWant{{"", brainID + "#/$defs/suggest_next_move/in/type", "got array, want object"}}},
		{"ErrDateTime", "peas:peas_mesh_advisory_v1", strings.Replace(advisory, "2026-08-14T21:04:00Z", "2026-08-14 21:04:00Z", 1), custody.EINVALID,
			[]violationWant{{"/observation_ts", peasID + "#/$defs/iso_timestamp/format", "is not valid date-time"}}},
		{"ErrDateTimeNoOffset", "peas:notify_driver/output", fmt.Sprintf(notified, "2026-08-14T21:04:00", "https://cdn.example/a.mp3"), custody.EINVALID,
			[]violationWant{{"/delivered_at", "", "date-time"}}},
		{"ErrURISpace", "peas:notify_driver/output", fmt.Sprintf(notified, "2026-08-14T21:04:00Z", "https://cdn.example/a b.mp3"), custody.EINVALID,
			[]violationWant{{"/audio_uri", peasID + "#/tools/4/output/properties/audio_uri/format", "is not valid uri"}}},
		{"ErrURIRelative", "peas:notify_driver/output", fmt.Sprintf(notified, "2026-08-14T21:04:00Z", "/a.mp3"), custody.EINVALID,
			[]violationWant{{"/audio_uri", "", "is not valid uri"}}},
		{"ErrDuplicateKey", "peas:issue_vms_update/input", strings.Replace(vms, `"duration_s": 900`, `"duration_s": 900, "duration_s": 60`, 1), custody.EINVALID,
			[]violationWant{{"", "", `duplicate key "duration_s" at byte 162`}}},
		{"ErrDuplicateNestedKey", "peas:peas_mesh_advisory_v1", strings.Replace(advisory, `"lat": 34.1377`, `"lat": 34.1377, "lat": 0`, 1), custody.EINVALID,
			[]violationWant{{"/position", "", `duplicate key "lat"`}}},
		{"ErrInvalidUTF8", "peas:issue_vms_update/input", strings.Replace(vms, "SLOW", "SL\xffW", 1), custody.EINVALID,
			[]violationWant{{"/message", "", "invalid UTF-8 in string at byte 129 (in /message)"}}},
		{"ErrMalformed", "peas:issue_vms_update/input", `{"message": "A",}`, custody.EINVALID,
			[]violationWant{{"", "", "invalid JSON: expected an object key at byte 16"}}},
		{"ErrTrailingData", "peas:issue_vms_update/input", vms + " {}", custody.EINVALID,
			[]violationWant{{"", "", "unexpected data after the JSON value"}}},
		{"ErrEmpty", "peas:issue_vms_update/input", "", custody.EINVALID,
			[]violationWant{{"", "", "unexpected end of JSON at byte 0"}}},
		{"ErrUnknownRef", "peas:issue_vms_update/inputs", vms, custody.ENOTFOUND, nil},
	}
	r := mustLoad(t, Options{Contracts: seeds(t)})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefusal(t, r.Validate(tc.ref, []byte(tc.doc)), tc.wantKind, tc.want)
		})
	}
}

// checkRefusal checks the kind of err and that each wanted violation is
// reported, in order, by the violation at the same index.
func checkRefusal(t *testing.T, err error, wantKind string, want []violationWant) {
	t.Helper()
	if kind := custody.ErrorKind(err); kind != wantKind {
		t.Fatalf("error %v, want kind %q", err, wantKind)
	}
	if err == nil {
		return
	}
	got := asError(t, err).Violations
	if len(got) < len(want) {
		t.Fatalf("got violations %+v, want at least %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Instance != w.instance || (w.keyword != "" && g.Keyword != w.keyword) || !strings.Contains(g.Message, w.message) {
			t.Errorf("violation %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestValidateOverSize(t *testing.T) {
	vms := readTestdata(t, "vms_update.json")
	r := mustLoad(t, Options{Contracts: seeds(t), MaxBytes: len(vms)})
	if err := r.Validate("peas:issue_vms_update/input", vms); err != nil {
		t.Fatalf("document at the cap: %v", err)
	}
	padded := append([]byte(" "), vms...)
	err := r.Validate("peas:issue_vms_update/input", padded)
	e := asError(t, err)
	if e.Kind != custody.EINVALID || !strings.Contains(e.Message, "over the limit of") {
		t.Errorf("got %v, want EINVALID over the limit", err)
	}
	if r := mustLoad(t, Options{Contracts: seeds(t)}); r.maxBytes != DefaultMaxBytes {
		t.Errorf("default cap %d, want %d", r.maxBytes, DefaultMaxBytes)
	}
}

func TestValidateReportsEveryCause(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	doc := `{"approval_request_id": 7, "billboard_id": "", "message": "x", "a": 1, "b": 2}`
	e := asError(t, r.Validate("peas:issue_vms_update/input", []byte(doc)))
	got := map[string]bool{}
	for _, v := range e.Violations {
		got[v.Instance+" "+v.Message] = true
	}
	for _, want := range []string{
		` additional property "a" is not allowed`,
		` additional property "b" is not allowed`,
		"/approval_request_id got number, want string",
		"/billboard_id minLength: got 0, want 1",
		"/message minLength: got 1, want 4",
	} {
		if !got[want] {
			t.Errorf("missing violation %q in %+v", want, e.Violations)
		}
	}
}

func TestValidatePropertyNamesLocation(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "names.json", `{"$id": "https://example.test/names.json",
		"type": "array", "items": {"propertyNames": {"maxLength": 1}}}`)
	r := mustLoad(t, Options{Contracts: seeds(t), Dir: dir})
	e := asError(t, r.Validate("names", []byte(`[{"ab": 1}, {}]`)))
	if len(e.Violations) != 1 || e.Violations[0].Instance != "/0" || !strings.Contains(e.Violations[0].Message, `invalid property name "ab"`) {
		t.Errorf("got %+v, want one violation at /0 naming \"ab\"", e.Violations)
	}
}

func TestValidateConcurrentLazy(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	refs := []string{
		peasID + "#/tools/3/input/properties/duration_s",
		peasID + "#/tools/3/input/properties/message",
		brainID + "#/$defs/FocusNode",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Validate(refs[i%len(refs)], []byte(`59`)); custody.ErrorKind(err) != custody.EINVALID {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent lazy validate: got %v, want EINVALID", err)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "fleet.json", `{
		"$id": "https://example.test/fleet.json", "title": "Fleet",
		"type": "object", "required": ["truck"], "additionalProperties": false,
		"properties": {"truck": {"$ref": "#/$defs/truck"}},
		"$defs": {"truck": {"type": "object", "required": ["plate"], "properties": {"plate": {"type": "string"}}}}
	}`)
	writeFile(t, dir, "noid.json", `{"type": "integer"}`)
	writeFile(t, dir, "notes.txt", `not a contract`)
	r := mustLoad(t, Options{Contracts: seeds(t), Dir: dir, Extra: map[string][]byte{"envelope.json": []byte(`{"$id": "https://example.test/env", "type": "string"}`)}})
	if n := len(r.Contracts()); n != 6 {
		t.Fatalf("got %d contracts, want 6: %+v", n, r.Contracts())
	}
	tests := []struct {
		name, ref, doc, wantKind string
	}{
		{"OKRoot", "fleet", `{"truck": {"plate": "X1"}}`, ""},
		{"OKDef", "fleet:truck", `{"plate": "X1"}`, ""},
		{"OKNoID", "noid", `3`, ""},
		{"OKExtra", "envelope", `"x"`, ""},
		{"ErrRoot", "fleet", `{"truck": {}}`, custody.EINVALID},
		{"ErrDef", "fleet:truck", `{"plate": 1}`, custody.EINVALID},
		{"ErrNoID", "noid", `"3"`, custody.EINVALID},
		{"ErrNotAContract", "notes", `1`, custody.ENOTFOUND},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.Validate(tc.ref, []byte(tc.doc)); custody.ErrorKind(err) != tc.wantKind {
				t.Errorf("Validate(%s, %s) = %v, want kind %q", tc.ref, tc.doc, err, tc.wantKind)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, content, wantKind, wantMsg string
	}{
		{"ErrMalformed", "broken.json", `{"type": "object",}`, custody.EINVALID, "is not valid JSON: expected an object key at byte 18"},
		{"ErrDuplicateKey", "dup.json", `{"type": "object", "type": "string"}`, custody.EINVALID, `duplicate key "type"`},
		{"ErrNotObject", "list.json", `[]`, custody.EINVALID, "is not a JSON object"},
		{"ErrRelativeID", "rel.json", `{"$id": "rel.json"}`, custody.EINVALID, "needs an absolute $id"},
		{"ErrSeedID", "peas.json", `{"$id": "` + peasID + `"}`, custody.EINVALID, "repeats the $id " + peasID + " of peas-tools.json"},
		{"ErrBadSchema", "bad.json", `{"$id": "https://example.test/bad", "type": 12}`, custody.EINVALID, "does not compile"},
		{"ErrBadRef", "ref.json", `{"$id": "https://example.test/ref", "$ref": "#/$defs/none"}`, custody.EINVALID, "does not compile"},
		{"ErrRemoteRef", "remote.json", `{"$id": "https://example.test/remote", "$ref": "https://example.test/other.json"}`, custody.EINVALID, "never fetched"},
		{"ErrNameClash", "peas.json", `{"$id": "https://example.test/p", "$defs": {"signature": true}}`, custody.EINVALID, `repeats the schema name "peas:signature"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tc.file, tc.content)
			_, err := Load(Options{Contracts: seeds(t), Dir: dir})
			e := asError(t, err)
			path := filepath.Join(dir, tc.file)
			if e.Kind != tc.wantKind || !strings.Contains(e.Message, "contract "+path+" ") || !strings.Contains(e.Message, tc.wantMsg) {
				t.Errorf("got %v; want %s naming %s and %q", err, tc.wantKind, path, tc.wantMsg)
			}
		})
	}
	_, err := Load(Options{Dir: filepath.Join(t.TempDir(), "missing")})
	if custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Errorf("missing directory: got %v, want ENOTFOUND", err)
	}
}

func TestValidateViolationPerKeyword(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "kw.json", `{"$id": "https://example.test/kw.json", "$defs": {
		"never": false,
		"not": {"not": {"type": "string"}},
		"oneOf": {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
		"anyOf": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
		"ifThen": {"if": {"required": ["a"]}, "then": {"required": ["b"]}},
		"dependentRequired": {"dependentRequired": {"a": ["c"]}},
		"unevaluated": {"properties": {"a": true}, "unevaluatedProperties": false},
		"falseProperty": {"properties": {"a": false}},
		"contains": {"contains": {"type": "string"}},
		"unique": {"uniqueItems": true},
		"const": {"const": {"a": 1}},
		"enum": {"enum": [1, 2]},
		"multipleOf": {"multipleOf": 0.5},
		"items": {"prefixItems": [{"type": "integer"}], "items": false}
	}}`)
	r := mustLoad(t, Options{Contracts: seeds(t), Dir: dir})
	tests := []struct {
		name, def, doc, wantInstance, wantKeyword, wantMessage string
	}{
		{"ErrFalse", "never", `1`, "", "never", "no value is allowed here"},
		{"ErrNot", "not", `"s"`, "", "not/not", "must not match the 'not' schema"},
		{"ErrOneOf", "oneOf", `1`, "", "oneOf/oneOf", "subschemas 0, 1 matched"},
		{"ErrAnyOf", "anyOf", `1`, "", "anyOf/anyOf/0/type", "got number, want string"},
		{"ErrIfThen", "ifThen", `{"a": 1}`, "", "ifThen/then/required", `missing required property "b"`},
		{"ErrDependentRequired", "dependentRequired", `{"a": 1}`, "", "dependentRequired/dependentRequired/a", `properties 'c' required`},
		{"ErrUnevaluated", "unevaluated", `{"a": 1, "z": 2}`, "/z", "unevaluated/unevaluatedProperties", `unevaluated property "z" is not allowed`},
		{"ErrFalseProperty", "falseProperty", `{"a": 1}`, "/a", "falseProperty/properties/a", `property "a" is not allowed`},
		{"ErrContains", "contains", `[1]`, "", "contains/contains", "no item matches the 'contains' schema"},
		{"ErrUnique", "unique", `[1, 1]`, "", "unique/uniqueItems", "items at 0 and 1 are equal"},
		{"ErrConst", "const", `{"a": 2}`, "", "const/const", "value must be"},
		{"ErrEnum", "enum", `3`, "", "enum/enum", "value must be one of 1, 2"},
		{"ErrMultipleOf", "multipleOf", `0.3`, "", "multipleOf/multipleOf", "multipleOf"},
		{"ErrItems", "items", `[1, 2]`, "/1", "items/items", "additional item 1 is not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := asError(t, r.Validate("kw:"+tc.def, []byte(tc.doc)))
			if e.Kind != custody.EINVALID || len(e.Violations) == 0 {
				t.Fatalf("got %v, want EINVALID with violations", e)
			}
			v := e.Violations[0]
			if v.Instance != tc.wantInstance || !strings.HasSuffix(v.Keyword, "#/$defs/"+tc.wantKeyword) || !strings.Contains(v.Message, tc.wantMessage) {
				t.Errorf("violations %+v, want the first at %q, keyword .../%s, message %q", e.Violations, tc.wantInstance, tc.wantKeyword, tc.wantMessage)
			}
		})
	}
}
