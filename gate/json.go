package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
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
// whether there is one.
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
		switch v[0] {
		case '{':
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) != nil {
				return nil, false
			}
			next, ok := obj[tok]
			if !ok {
				return nil, false
			}
			raw = next
		case '[':
			var arr []json.RawMessage
			i, err := strconv.Atoi(tok)
			if json.Unmarshal(v, &arr) != nil || err != nil || i < 0 || i >= len(arr) || strconv.Itoa(i) != tok {
				return nil, false
			}
			raw = arr[i]
		default:
			return nil, false
		}
	}
	return raw, true
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
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
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

// appendString appends s as a JSON string. Invalid UTF-8 is replaced, so
// the result is always valid JSON.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
