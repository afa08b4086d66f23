package contract

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// The seed contracts are owned by the packages that read them (peas,
// brain, gate), which import this one, so these tests load byte-for-byte
// copies from testdata/seeds and name them as their owners do.
// TestSeedSourcesAgree proves the copies and the names match the owners'.

// seeds returns the seed contracts in the order custody lists them.
func seeds(t testing.TB) []Source {
	t.Helper()
	return []Source{
		{File: "peas-tools.json", Raw: readTestdata(t, "seeds/peas-tools.json"), Names: peasNames},
		{File: "brain-packet.json", Raw: readTestdata(t, "seeds/brain-packet.json"), Names: brainNames},
		{File: "clinical-action-envelope.json", Raw: readTestdata(t, "seeds/clinical-action-envelope.json"),
			Names: func(any) []Name { return []Name{{Name: "cae:envelope"}} }},
	}
}

// SeedsForTest exposes seeds to the external test package.
func SeedsForTest(t testing.TB) []Source { return seeds(t) }

// peasNames names the PEAS tools and $defs as package peas does.
func peasNames(tree any) []Name {
	var out []Name
	tools, _ := member(tree, "tools").([]any)
	for i, tool := range tools {
		name, _ := member(tool, "name").(string)
		for _, io := range []string{"input", "output"} {
			if member(tool, io) != nil {
				out = append(out, Name{fmt.Sprintf("peas:%s/%s", name, io), Pointer("tools", strconv.Itoa(i), io)})
			}
		}
	}
	return append(out, DefNames("peas", tree)...)
}

// brainNames names the Brain jobs' in and out shapes as package brain
// does.
func brainNames(tree any) []Name {
	var out []Name
	for _, job := range sortedKeys(member(tree, "$defs")) {
		for _, io := range []string{"in", "out"} {
			if member(tree, "$defs", job, io) != nil {
				out = append(out, Name{"brain:" + job + "/" + io, Pointer("$defs", job, io)})
			}
		}
	}
	return out
}

func TestLoadNoSources(t *testing.T) {
	r := mustLoad(t, Options{})
	if len(r.Contracts()) != 0 || len(r.Named()) != 0 {
		t.Fatalf("got %+v named %+v, want an empty registry", r.Contracts(), r.Named())
	}
	if _, err := r.Resolve("peas:issue_vms_update/input"); err == nil {
		t.Error("resolved a seed name no source gave")
	}
}

func TestLoadSources(t *testing.T) {
	const id = "https://example.test/own.json"
	own := []byte(`{"$id": "` + id + `", "$defs": {"a/b": {"type": "integer"}}}`)
	r := mustLoad(t, Options{Contracts: []Source{
		{File: "own.json", Raw: own, Names: func(tree any) []Name {
			return append([]Name{{Name: "own"}}, DefNames("own", tree)...)
		}},
		{File: "unnamed.json", Raw: []byte(`{"$id": "https://example.test/unnamed.json"}`)},
	}})
	want := []Named{{"own", id + "#", id}, {"own:a/b", id + "#/$defs/a~1b", id}}
	if got := r.Named(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("named %+v, want %+v", got, want)
	}
	if c := r.Contracts(); len(c) != 2 || c[0].File != "own.json" || c[1].Schemas != 0 {
		t.Errorf("contracts %+v, want own.json then unnamed.json with no names", c)
	}
	if err := r.Validate("own:a/b", []byte(`"x"`)); err == nil {
		t.Error("own:a/b accepted a string")
	}
}

func TestLoadSourcesRefused(t *testing.T) {
	named := func(names ...Name) func(any) []Name { return func(any) []Name { return names } }
	tests := []struct {
		name    string
		sources []Source
		wantMsg string
	}{
		{"ErrNoID", []Source{{File: "noid.json", Raw: []byte(`{"type": "integer"}`)}}, "contract noid.json needs an absolute $id"},
		{"ErrNotJSON", []Source{{File: "bad.json", Raw: []byte(`{`)}}, "contract bad.json is not valid JSON"},
		{"ErrNotSchema", []Source{{File: "ptr.json", Raw: []byte(`{"$id": "https://example.test/ptr", "title": "x"}`), Names: named(Name{"ptr:title", "/title"})}}, "contract ptr.json does not compile"},
		{"ErrNameClash", []Source{
			{File: "one.json", Raw: []byte(`{"$id": "https://example.test/one"}`), Names: named(Name{Name: "same"})},
			{File: "two.json", Raw: []byte(`{"$id": "https://example.test/two"}`), Names: named(Name{Name: "same"})},
		}, `contract two.json repeats the schema name "same"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Options{Contracts: tc.sources})
			e := asError(t, err)
			if e.Kind != custody.EINVALID || !strings.Contains(e.Message, tc.wantMsg) {
				t.Errorf("got %v, want EINVALID %q", err, tc.wantMsg)
			}
		})
	}
}
