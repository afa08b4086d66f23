package guard

import (
	"strings"

	"github.com/custody-dev/custody"
)

// Facts is what a composed text may state: the numbers, words and field
// names found in the texts it was given (a signature as JSON, comparisons,
// the deterministic template). A text may restate facts; it may not add.
type Facts struct {
	numbers map[string]bool
	words   map[string]bool
	fields  map[string]bool
}

// NewFacts collects the facts of sources.
func NewFacts(sources ...string) Facts {
	f := Facts{numbers: map[string]bool{}, words: map[string]bool{}, fields: map[string]bool{}}
	for _, s := range sources {
		f.Add(s)
	}
	return f
}

// Add collects the facts of one more source.
func (f Facts) Add(source string) {
	for _, n := range Numbers(source) {
		f.numbers[n] = true
	}
	for _, w := range Words(source) {
		f.words[w] = true
		// "Galesburg's" and "Kalamazoo-Portage" state the names they join.
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '\'' || r == '’' || r == '-' }) {
			f.words[part] = true
		}
	}
	for _, fd := range Fields(source) {
		f.fields[fd] = true
	}
}

// OnlyNumbers refuses a number that no source states.
func (f Facts) OnlyNumbers() Check {
	return func(text string) error {
		var vs []custody.Violation
		for _, n := range unique(Numbers(text)) {
			if !f.numbers[n] {
				vs = append(vs, violation("number", "number %s is not in the facts", n))
			}
		}
		return refuse(vs)
	}
}

// OnlyNames refuses a proper name (a place, a road, an agency) that no
// source states.
func (f Facts) OnlyNames() Check {
	return func(text string) error {
		var vs []custody.Violation
		for _, n := range unique(Names(text)) {
			if !f.words[strings.ToLower(n)] {
				vs = append(vs, violation("name", "name %q is not in the facts", n))
			}
		}
		return refuse(vs)
	}
}

// OnlyFields refuses a snake_case field name that no source states.
func (f Facts) OnlyFields() Check {
	return func(text string) error {
		var vs []custody.Violation
		for _, fd := range unique(Fields(text)) {
			if !f.fields[fd] {
				vs = append(vs, violation("field", "field %s is not in the facts", fd))
			}
		}
		return refuse(vs)
	}
}

// OnlyTerms refuses any word of vocabulary (lowercase topic words such as
// "wind" or "humidity") that appears in text but in no source: a text may
// not bring up a measurement it was not given.
func (f Facts) OnlyTerms(vocabulary ...string) Check {
	return func(text string) error {
		said := map[string]bool{}
		for _, w := range Words(text) {
			said[w] = true
		}
		var vs []custody.Violation
		for _, term := range vocabulary {
			if said[term] && !f.words[term] {
				vs = append(vs, violation("term", "%q is not in the facts", term))
			}
		}
		return refuse(vs)
	}
}

func unique(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
