package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
)

// compileBundle compiles a bundle on its own, with nothing else loaded.
func compileBundle(t *testing.T, bundle []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := strictjson.DecodeExact(bundle)
	if err != nil {
		t.Fatalf("bundle is not strict JSON: %v", err)
	}
	c := draft2020.NewCompiler(nil, true)
	const loc = "urn:custody:test:bundle"
	if err := c.AddResource(loc, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("bundle does not compile on its own: %v\n%s", err, bundle)
	}
	return s
}

// sameVerdicts checks that the bundle of ref accepts and refuses exactly
// what the registry does for each document.
func sameVerdicts(t *testing.T, r *Registry, ref string, docs []string) {
	t.Helper()
	bundle, err := r.Bundle(ref)
	if err != nil {
		t.Fatalf("Bundle(%s): %v", ref, err)
	}
	s := compileBundle(t, bundle)
	for _, doc := range docs {
		v, err := strictjson.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		want := r.Validate(ref, []byte(doc)) == nil
		if got := s.Validate(v) == nil; got != want {
			t.Errorf("%s: bundle says valid=%v, registry %v, for %.80s", ref, got, want, doc)
		}
	}
}

func TestBundleSeeds(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	advisory := string(readTestdata(t, "advisory.json"))
	vms := string(readTestdata(t, "vms_update.json"))
	docs := []string{
		advisory, vms, `{}`, `[]`, `1`, `"x"`, `null`,
		strings.Replace(advisory, "critical", "severe", 1),
		strings.Replace(advisory, "2026-08-14T21:04:00Z", "yesterday", 1),
		strings.Replace(vms, "3f1c2a9e", "zzzz", 1),
		strings.Replace(vms, "900", "30", 1),
	}
	for _, n := range r.Named() {
		sameVerdicts(t, r, n.Name, docs)
	}
}

func TestBundleShape(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	raw, err := r.Bundle("peas:issue_vms_update/input")
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Schema string                     `json:"$schema"`
		Defs   map[string]json.RawMessage `json:"$defs"`
		Props  map[string]struct {
			Ref string `json:"$ref"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	if b.Schema != draft2020.URI {
		t.Errorf("$schema = %q, want %q", b.Schema, draft2020.URI)
	}
	if _, ok := b.Defs["uuid_v4"]; !ok || len(b.Defs) != 1 {
		t.Errorf("$defs holds %d entries, want only uuid_v4", len(b.Defs))
	}
	if ref := b.Props["approval_request_id"].Ref; ref != "#/$defs/uuid_v4" {
		t.Errorf("approval_request_id $ref = %q, want #/$defs/uuid_v4", ref)
	}
	if strings.Contains(string(raw), `\u003c`) {
		t.Errorf("bundle escapes HTML: %s", raw)
	}
}

func TestBundleRewritesPointers(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "shapes.json", `{
		"$id": "https://example.test/shapes.json",
		"properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
		"$defs": {
			"box": {
				"type": "object", "additionalProperties": false,
				"properties": {
					"code": {"$ref": "#/properties/code"},
					"inner": {"$ref": "#/$defs/box/$defs/inner"},
					"self": {"$ref": "#/$defs/box"},
					"unit": {"$ref": "#/$defs/unit"},
					"default": {"$ref": "https://example.test/shapes.json#/$defs/unit"}
				},
				"$defs": {"inner": {"type": "integer"}, "unit": {"const": "own"}}
			},
			"unit": {"enum": ["cm", "in"]}
		}
	}`)
	writeFile(t, dir, "outside.json", `{"$id": "https://example.test/outside.json", "$ref": "https://example.test/shapes.json#/$defs/unit"}`)
	r := mustLoad(t, Options{Contracts: seeds(t), Dir: dir})
	sameVerdicts(t, r, "shapes:box", []string{
		`{"code": "ABC", "inner": 1, "unit": "cm", "default": "in", "self": {"code": "XYZ"}}`,
		`{"code": "abc"}`, `{"inner": 1.5}`, `{"unit": "own"}`, `{"default": "mm"}`,
		`{"self": {"self": {"code": "AB"}}}`, `{"other": 1}`,
	})
	sameVerdicts(t, r, "shapes", []string{`{"code": "ABC"}`, `{"code": "abc"}`})
	if _, err := r.Bundle("outside"); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("bundle of a schema that leaves its contract: got %v, want EINVALID", err)
	}
	if _, err := r.Bundle("nope"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Errorf("bundle of an unknown ref: got %v, want ENOTFOUND", err)
	}
}
