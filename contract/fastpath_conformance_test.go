package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fast path on the official JSON Schema Test Suite: every group
// schema it compiles, every test of that group. It must never accept a
// document the library refuses (with format assertions on, as the
// registry runs), nor, on the required suite and the format files the
// registry asserts, one the suite says is invalid.
const (
	// fastSuiteHandled is a floor on the suite tests whose schema the
	// fast path compiles, so that a regression in coverage shows.
	fastSuiteHandled = 750
)

// fastSuiteCount tallies a run.
type fastSuiteCount struct {
	groups, compiled, tests, accepted int
	failures                          []string
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
	t.Logf("fast path compiled %d of %d groups: %d tests handled, %d accepted, none against the library or the suite",
		total.compiled, total.groups, total.tests, total.accepted)
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
	tree, err := decode(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	groups, _ := tree.([]any)
	for gi, g := range groups {
		count.groups++
		const loc = "http://testsuite.invalid/schema.json"
		schemaTree := member(g, "schema")
		id := loc
		if s, ok := member(schemaTree, "$id").(string); ok {
			id = strings.TrimSuffix(s, "#")
		}
		fast, err := compileFast(schemaTree, id, "")
		if err != nil {
			if !errors.Is(err, errUnsupported) {
				t.Errorf("%s group %d: %v", file, gi, err)
			}
			continue
		}
		c := newCompiler(suiteRemotes(suite), true)
		if err := c.AddResource(loc, schemaTree); err != nil {
			t.Fatalf("%s group %d: %v", file, gi, err)
		}
		lib, err := c.Compile(loc)
		if err != nil {
			t.Fatalf("%s group %d: compile: %v", file, gi, err)
		}
		count.compiled++
		tests, _ := member(g, "tests").([]any)
		for _, tc := range tests {
			doc, err := json.Marshal(member(tc, "data"))
			if err != nil {
				t.Fatal(err)
			}
			count.tests++
			if !fast.accepts(new(fastScan), doc) {
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
