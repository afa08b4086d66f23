package contract

import (
	"bytes"
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
)

// benchCases are the documents measured: a mesh advisory and the
// arguments of issue_vms_update, both valid.
var benchCases = []struct {
	name, ref, file string
}{
	{"Advisory", "peas:peas_mesh_advisory_v1", "advisory.json"},
	{"VMSUpdate", "peas:issue_vms_update/input", "vms_update.json"},
}

// BenchmarkValidate compares the registry (resolve, size cap, fast path;
// strict decode, validate and refusal mapping when the fast path does not
// accept) with the registry's slow path alone (strict decode, then the
// library, as every document went before the fast path) and with the
// library alone (its own UnmarshalJSON, then Validate), on the same
// compiled schema and bytes. Refused measures a document the fast path
// refuses, which pays for both paths.
func BenchmarkValidate(b *testing.B) {
	r := mustLoad(b, Options{Contracts: seeds(b)})
	for _, bc := range benchCases {
		raw := readTestdata(b, bc.file)
		uri, err := r.Resolve(bc.ref)
		if err != nil {
			b.Fatal(err)
		}
		sch, err := r.schema(uri)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/Registry", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Validate(bc.ref, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/SlowPath", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := strictjson.Decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				if err := sch.lib.Validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/Library", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchLibrary(b, sch.lib, raw)
			}
		})
	}
	refused := bytes.Replace(readTestdata(b, "vms_update.json"), []byte("900"), []byte("900.5"), 1)
	b.Run("VMSUpdate/Refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Validate("peas:issue_vms_update/input", refused); err == nil {
				b.Fatal("refused document accepted")
			}
		}
	})
}

func benchLibrary(b *testing.B, sch *jsonschema.Schema, raw []byte) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOverhead runs the registry (with its fast path) and the
// library alternately in one loop and reports both times and their ratio,
// registry over library, so that load from other processes on a shared
// machine hits both sides alike.
func BenchmarkOverhead(b *testing.B) {
	r := mustLoad(b, Options{Contracts: seeds(b)})
	for _, bc := range benchCases {
		raw := readTestdata(b, bc.file)
		uri, _ := r.Resolve(bc.ref)
		sch, err := r.schema(uri)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			var reg, lib time.Duration
			registry := func() {
				start := time.Now()
				if err := r.Validate(bc.ref, raw); err != nil {
					b.Fatal(err)
				}
				reg += time.Since(start)
			}
			library := func() {
				start := time.Now()
				benchLibrary(b, sch.lib, raw)
				lib += time.Since(start)
			}
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					registry()
					library()
				} else {
					library()
					registry()
				}
			}
			b.ReportMetric(float64(reg.Nanoseconds())/float64(b.N), "registry-ns/op")
			b.ReportMetric(float64(lib.Nanoseconds())/float64(b.N), "library-ns/op")
			b.ReportMetric(float64(reg)/float64(lib), "ratio")
		})
	}
}

// BenchmarkDecode compares the strict decoder with the library's loader.
func BenchmarkDecode(b *testing.B) {
	raw := readTestdata(b, "advisory.json")
	b.Run("Strict", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := strictjson.Decode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Library", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoad measures loading and compiling the seed contracts.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(Options{Contracts: seeds(b)}); err != nil {
			b.Fatal(err)
		}
	}
}
