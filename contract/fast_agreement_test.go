package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody/contract/fast"
	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
)

// The fast path (package contract/fast) must agree with the library: it
// may leave a valid document to the library, but never accept one the
// library refuses. These tests prove it on the official JSON Schema Test
// Suite (every test of every group whose schema the fast path compiles;
// a group it does not compile is the library's alone, in the registry
// too), on the seed contracts, and by fuzzing documents against every
// named seed schema (FuzzFastPathAgrees, which CI runs as a smoke test).
//
// On the suite, the fast path must never accept a document the library
// refuses (with format assertions on, as the registry runs), nor, on the
// required suite and the format files the registry asserts, one the
// suite says is invalid.
const (
	// fastSuiteHandled is a floor on the suite tests whose schema the
	// fast path compiles, so that a regression in coverage shows.
	fastSuiteHandled = 750
)

// fastSuiteCount tallies a run.
type fastSuiteCount struct {
	groups, compiled, all, tests, accepted int
	failures                               []string
}

func TestFastPathConformance(t *testing.T) {
	suite := sharedDir(t, "json-schema-test-suite")
	var total fastSuiteCount
	for _, pattern := range []string{"*.json", "optional/format/date-time.json", "optional/format/uri.json", "optional/format/uri-reference.json", "optional/format/uuid.json", "optional/*.json"} {
		files, err := filepath.Glob(filepath.Join(suite, "tests", "draft2020-12", pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no suite files match %s", pattern)
		}
		// Optional files other than the format ones may expect what the
		// library (Go regexp, no bignum limits) does not do: there the
		// fast path is held to the library only.
		bySuite := !strings.HasPrefix(pattern, "optional/*")
		for _, f := range files {
			runFastSuiteFile(t, suite, f, bySuite, &total)
		}
	}
	for _, f := range total.failures {
		t.Error(f)
	}
	t.Logf("fast path compiled %d of %d groups: %d of %d tests handled, %d accepted, none against the library or the suite",
		total.compiled, total.groups, total.tests, total.all, total.accepted)
	if total.tests < fastSuiteHandled {
		t.Errorf("fast path handled %d suite tests, want at least %d", total.tests, fastSuiteHandled)
	}
}

func runFastSuiteFile(t *testing.T, suite, file string, bySuite bool, count *fastSuiteCount) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := strictjson.DecodeExact(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	groups, _ := tree.([]any)
	for gi, g := range groups {
		tests, _ := member(g, "tests").([]any)
		count.groups++
		count.all += len(tests)
		const loc = "http://testsuite.invalid/schema.json"
		schemaTree := member(g, "schema")
		id := loc
		if s, ok := member(schemaTree, "$id").(string); ok {
			id = strings.TrimSuffix(s, "#")
		}
		fastSchema, err := fast.NewCompiler(schemaTree, id).Compile("")
		if err != nil {
			if !errors.Is(err, fast.ErrUnsupported) {
				t.Errorf("%s group %d: %v", file, gi, err)
			}
			continue
		}
		c := draft2020.NewCompiler(suiteRemotes(suite), true)
		if err := c.AddResource(loc, schemaTree); err != nil {
			t.Fatalf("%s group %d: %v", file, gi, err)
		}
		lib, err := c.Compile(loc)
		if err != nil {
			t.Fatalf("%s group %d: compile: %v", file, gi, err)
		}
		count.compiled++
		for _, tc := range tests {
			doc, err := json.Marshal(member(tc, "data"))
			if err != nil {
				t.Fatal(err)
			}
			count.tests++
			if !fastSchema.Accepts(doc) {
				continue
			}
			count.accepted++
			where := fmt.Sprintf("%s: %s: %s", filepath.Base(file), member(g, "description"), member(tc, "description"))
			if !libraryAccepts(lib, doc) {
				count.failures = append(count.failures, where+": fast path accepts what the library refuses")
			}
			if bySuite && !member(tc, "valid").(bool) {
				count.failures = append(count.failures, where+": fast path accepts what the suite calls invalid")
			}
		}
	}
}

// TestFastPathCoversSeeds checks that the fast path compiles every named
// seed schema and accepts the benchmarked documents: without it, the
// registry would run the library alone on the seeds.
func TestFastPathCoversSeeds(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	for _, n := range r.Named() {
		d := r.byID[n.Contract]
		_, ptr, _ := strings.Cut(n.URI, "#")
		if _, err := fast.NewCompiler(d.tree, d.ID).Compile(ptr); err != nil {
			t.Errorf("%s: %v", n.Name, err)
		}
	}
	for _, bc := range benchCases {
		uri, _ := r.Resolve(bc.ref)
		s, err := r.schema(uri)
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil || !s.fast.Accepts(readTestdata(t, bc.file)) {
			t.Errorf("%s: the fast path does not accept %s", bc.ref, bc.file)
		}
	}
}

// TestValidateFastPathRefusalsUnchanged checks that a document the fast
// path refuses still gets the library's violations: the refusal of a
// schema the fast path compiles equals that of the library alone.
func TestValidateFastPathRefusalsUnchanged(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	vms := string(readTestdata(t, "vms_update.json"))
	for _, doc := range []string{
		strings.Replace(vms, "900", "900.5", 1),
		strings.Replace(vms, `"message": "PILE-UP AHEAD. SLOW DOWN NOW"`, `"message": "x", "extra": 1`, 1),
		`{}`,
	} {
		uri, _ := r.Resolve("peas:issue_vms_update/input")
		s, _ := r.schema(uri)
		v, err := strictjson.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		want := r.refusal(uri, s.lib.Validate(v))
		got := asError(t, r.Validate("peas:issue_vms_update/input", []byte(doc)))
		if got.Message != want.Message || len(got.Violations) != len(want.Violations) {
			t.Errorf("%s: got %v, want %v", doc, got, want)
		}
	}
}

func TestValidateFastPathConcurrent(t *testing.T) {
	r := mustLoad(t, Options{Contracts: seeds(t)})
	docs := map[string][]byte{}
	for _, bc := range benchCases {
		docs[bc.ref] = readTestdata(t, bc.file)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				for ref, doc := range docs {
					if err := r.Validate(ref, doc); err != nil {
						t.Errorf("%s: %v", ref, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// fuzzSeeds are valid documents for some named schemas, from which the
// fuzzer mutates; every named schema also starts from "{}".
var fuzzSeeds = []struct{ name, doc string }{
	{"peas:notify_driver/output", `{"notification_id": "3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f", "delivered_at": "2026-08-14T21:04:00.25+02:00",
		"warning_text_shown": "Pile-up ahead, slow down", "audio_uri": "https://cdn.example/a%20b.mp3",
		"reasoning": "Detector tier critical at MM85 EB; approval granted by operator."}`},
	{"peas:mesh_sensor_reading", `{"thermal_anomaly_pixels": 123456789012345678901234567890, "humidity_pct": 100, "wind_dir_deg": 0.5}`},
	{"peas:mesh_detector_state", `{"tier": "info", "rule_signature": "rule", "wfigs_proximity_km": 0}`},
	{"peas:mgrs_position", `{"mgrs": "11SKU1234567890", "lat": -90, "lon": 180, "uncertainty_m": 1e2}`},
	{"peas:uuid_v4", `"3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f"`},
	{"peas:iso_timestamp", `"2026-12-31T23:59:60Z"`},
	{"peas:tier_enum", `"emergency"`},
}

// FuzzFastPathAgrees mutates documents against every named seed schema:
// whatever the fast path accepts must be strict JSON that the library
// accepts too.
func FuzzFastPathAgrees(f *testing.F) {
	r := mustLoad(f, Options{Contracts: seeds(f)})
	named := r.Named()
	index := map[string]int{}
	for i, n := range named {
		index[n.Name] = i
		f.Add(uint16(i), []byte(`{}`))
	}
	for _, bc := range benchCases {
		f.Add(uint16(index[bc.ref]), readTestdata(f, bc.file))
	}
	for _, s := range fuzzSeeds {
		f.Add(uint16(index[s.name]), []byte(s.doc))
	}
	f.Fuzz(func(t *testing.T, which uint16, doc []byte) {
		n := named[int(which)%len(named)]
		s, err := r.schema(n.URI)
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil || !s.fast.Accepts(doc) {
			return
		}
		v, err := strictjson.Decode(doc)
		if err != nil {
			t.Fatalf("%s: fast path accepts %q, which does not decode: %v", n.Name, doc, err)
		}
		if err := s.lib.Validate(v); err != nil {
			t.Fatalf("%s: fast path accepts %q, which the library refuses: %v", n.Name, doc, err)
		}
	})
}

// libraryAccepts runs the registry's path without a fast path: strict
// decode, then the library.
func libraryAccepts(lib *jsonschema.Schema, doc []byte) bool {
	v, err := strictjson.Decode(doc)
	return err == nil && lib.Validate(v) == nil
}
