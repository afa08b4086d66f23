package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/custody-dev/custody/internal/strictjson"
)

// splitPointer returns the unescaped reference tokens of an RFC 6901 JSON
// pointer; "" is the whole document.
func splitPointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, errors.New("a JSON pointer starts with /")
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// lookup returns the raw value at ptr in the JSON document raw, and
// whether there is one. It reads raw in place, without decoding it: the
// gateway only looks into documents that passed their contract, so raw is
// already strict JSON, as internal/strictjson reads it for every door.
// lookup therefore holds no strictness rule of its own: it only finds
// where values end, and unescapes a key with the shared reader. Given
// anything else it may answer either way, but it never panics. FuzzLookup holds it to finding the
// value by decoding (lookupByDecoding), which takes 1.6 us against its
// 131 ns for a ref in a four-member output: a call does one or more
// lookups, and its CPU outside the writer (BenchmarkGatewayCPU) is 4 to
// 10 us, so decoding would add a seventh or more:
//
//	go test -run '^$' -bench 'Lookup$' -count 6 ./gate/ (2026-12-01, 2 vCPU Xeon)
func lookup(raw json.RawMessage, ptr string) (json.RawMessage, bool) {
	toks, err := splitPointer(ptr)
	if err != nil {
		return nil, false
	}
	for _, tok := range toks {
		v := bytes.TrimSpace(raw)
		if len(v) == 0 {
			return nil, false
		}
		var ok bool
		switch v[0] {
		case '{':
			raw, ok = member(v, tok)
		case '[':
			raw, ok = element(v, tok)
		}
		if !ok {
			return nil, false
		}
	}
	return raw, true
}

// member returns the value of the member of the object obj named name.
func member(obj []byte, name string) ([]byte, bool) {
	for i := skipSpace(obj, 1); i < len(obj) && obj[i] == '"'; {
		kend, ok := skipString(obj, i)
		if !ok {
			return nil, false
		}
		key := obj[i+1 : kend-1]
		if i = skipSpace(obj, kend); i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		start := skipSpace(obj, i+1)
		end, ok := skipValue(obj, start)
		if !ok {
			return nil, false
		}
		if keyIs(key, name) {
			return obj[start:end], true
		}
		if i = skipSpace(obj, end); i >= len(obj) || obj[i] != ',' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
	}
	return nil, false
}

// element returns the element of the array arr at the index tok spells
// (decimal, no leading zeros).
func element(arr []byte, tok string) ([]byte, bool) {
	n, err := strconv.Atoi(tok)
	if err != nil || n < 0 || strconv.Itoa(n) != tok {
		return nil, false
	}
	for i := skipSpace(arr, 1); i < len(arr) && arr[i] != ']'; n-- {
		end, ok := skipValue(arr, i)
		if !ok {
			return nil, false
		}
		if n == 0 {
			return arr[i:end], true
		}
		if i = skipSpace(arr, end); i >= len(arr) || arr[i] != ',' {
			return nil, false
		}
		i = skipSpace(arr, i+1)
	}
	return nil, false
}

// keyIs reports whether the raw member name key, between its quotes,
// names name.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == name
	}
	s, ok := unquote(key)
	return ok && string(s) == name
}

// unquote decodes the content of a string literal, between its quotes,
// with the shared strict reader.
func unquote(content []byte) ([]byte, bool) {
	q := make([]byte, 0, len(content)+2)
	d := strictjson.Reader{In: append(append(append(q, '"'), content...), '"')}
	s, err := d.StringBytes()
	return s, err == nil && d.Pos == len(d.In)
}

// skipValue returns where the value starting at b[i] ends, and false when
// there is no value there.
func skipValue(b []byte, i int) (int, bool) {
	start, depth := i, 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			end, ok := skipString(b, i)
			if !ok {
				return 0, false
			}
			if i = end; depth == 0 {
				return i, true
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 { // the end of what holds a scalar
				return i, i > start
			}
			if depth--; depth == 0 {
				return i + 1, true
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i, i > start
		}
		i++
	}
	return i, depth == 0 && i > start
}

// skipString returns where the string starting at b[i] ends, after its
// closing quote.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// refValue renders a JSON scalar as a ref value: a string as its text, a
// number or boolean as its literal. It reports false for anything else.
func refValue(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' {
			if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
				return string(body), true // nothing to unescape
			}
		}
		d := strictjson.Reader{In: raw}
		s, err := d.StringBytes()
		if err != nil || d.Pos != len(raw) {
			return "", false
		}
		return string(s), true
	case '{', '[', 'n':
		return "", false
	}
	return string(raw), true
}

// withoutMembers returns the JSON object raw without its top-level members
// named in names. It returns raw itself when none is present, so the
// common case costs no copy.
func withoutMembers(raw json.RawMessage, names []string) (json.RawMessage, error) {
	if len(names) == 0 {
		return raw, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	found := false
	for _, n := range names {
		if _, ok := obj[n]; ok {
			delete(obj, n)
			found = true
		}
	}
	if !found {
		return raw, nil
	}
	return json.Marshal(obj)
}
