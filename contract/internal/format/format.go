// Package format holds the "format" checkers the contract registry
// registers with the JSON Schema library, which the fast path calls
// directly: date-time, uri, uri-reference and uuid, each following its
// RFC grammar exactly.
package format

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// The library checks "date-time" with a parser that accepts signs inside
// numeric fields, and "uri" / "uri-reference" with net/url, which accepts
// spaces, "<>", "{}", "|", "^", "`", "\", '"', non-ASCII bytes and "[]"
// in a path. The checkers below follow the RFC grammars exactly.

// UUID accepts the RFC 9562 string form of a UUID: 32 hex digits,
// either case, in groups of 8-4-4-4-12 joined by hyphens. It accepts what
// the library's own "uuid" checker accepts.
func UUID(s string) error {
	if len(s) != 36 {
		return errors.New("a UUID is 36 characters: 8-4-4-4-12 hex digits")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return fmt.Errorf("character %d must be '-'", i+1)
			}
			continue
		}
		if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return fmt.Errorf("character %d is not a hex digit", i+1)
		}
	}
	return nil
}

// DateTime accepts an RFC 3339 date-time (section 5.6) and nothing
// else: four-digit year, two-digit fields, valid day of month, a second
// of 60 only at 23:59 UTC, and a mandatory offset.
func DateTime(s string) error {
	if len(s) < 20 {
		return errors.New("too short for an RFC 3339 date-time")
	}
	if s[10] != 'T' && s[10] != 't' {
		return errors.New("date and time must be separated by 'T'")
	}
	if err := checkDate(s[:10]); err != nil {
		return err
	}
	return checkTime(s[11:])
}

// digits2 reads two ASCII digits at s[i:].
func digits2(s string, i int) (int, bool) {
	if i+2 > len(s) || !isDigit(s[i]) || !isDigit(s[i+1]) {
		return 0, false
	}
	return int(s[i]-'0')*10 + int(s[i+1]-'0'), true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// checkDate accepts full-date: YYYY-MM-DD.
func checkDate(s string) error {
	hi, ok1 := digits2(s, 0)
	lo, ok2 := digits2(s, 2)
	month, ok3 := digits2(s, 5)
	day, ok4 := digits2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 || s[4] != '-' || s[7] != '-' {
		return errors.New("date must be YYYY-MM-DD")
	}
	year := hi*100 + lo
	if month < 1 || month > 12 {
		return fmt.Errorf("month %02d out of range", month)
	}
	if day < 1 || day > daysIn(year, month) {
		return fmt.Errorf("day %02d out of range for %04d-%02d", day, year, month)
	}
	return nil
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// checkTime accepts full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM).
func checkTime(s string) error {
	h, ok1 := digits2(s, 0)
	m, ok2 := digits2(s, 3)
	sec, ok3 := digits2(s, 6)
	if !ok1 || !ok2 || !ok3 || s[2] != ':' || s[5] != ':' {
		return errors.New("time must be HH:MM:SS")
	}
	if h > 23 || m > 59 || sec > 60 {
		return errors.New("hour, minute or second out of range")
	}
	rest := s[8:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := 0
		for n < len(frac) && isDigit(frac[n]) {
			n++
		}
		if n == 0 {
			return errors.New("second fraction needs a digit")
		}
		rest = frac[n:]
	}
	offset, err := checkOffset(rest)
	if err != nil {
		return err
	}
	if utc := ((h*60+m-offset)%1440 + 1440) % 1440; sec == 60 && utc != 23*60+59 {
		return errors.New("a leap second must fall at 23:59:60 UTC")
	}
	return nil
}

// checkOffset accepts time-offset and returns it in minutes east of UTC.
func checkOffset(s string) (int, error) {
	if s == "Z" || s == "z" {
		return 0, nil
	}
	h, ok1 := digits2(s, 1)
	m, ok2 := digits2(s, 4)
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' || !ok1 || !ok2 {
		return 0, errors.New("offset must be Z or ±HH:MM")
	}
	if h > 23 || m > 59 {
		return 0, errors.New("offset out of range")
	}
	if s[0] == '-' {
		return -(h*60 + m), nil
	}
	return h*60 + m, nil
}

// URI accepts an RFC 3986 URI: scheme ":" hier-part ["?" query]
// ["#" fragment].
func URI(s string) error {
	rest, ok := cutScheme(s)
	if !ok {
		return errors.New("not an absolute URI: scheme missing or invalid")
	}
	return checkRelative(rest, false)
}

// URIReference accepts an RFC 3986 URI-reference: a URI or a
// relative reference.
func URIReference(s string) error {
	if rest, ok := cutScheme(s); ok {
		return checkRelative(rest, false)
	}
	return checkRelative(s, true)
}

// cutScheme returns what follows scheme ":" when s starts with one.
func cutScheme(s string) (rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 1 || !isAlpha(s[0]) {
		return s, false
	}
	for j := 1; j < i; j++ {
		if b := s[j]; !isAlpha(b) && !isDigit(b) && b != '+' && b != '-' && b != '.' {
			return s, false
		}
	}
	return s[i+1:], true
}

func isAlpha(b byte) bool { return (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// checkRelative checks what follows the scheme (hier-part) or, when
// relative is set, a whole relative-ref: [//authority] path [?query]
// [#fragment].
func checkRelative(s string, relative bool) error {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		if err := checkChars(s[i+1:], "/?", "fragment"); err != nil {
			return err
		}
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		if err := checkChars(s[i+1:], "/?", "query"); err != nil {
			return err
		}
		s = s[:i]
	}
	if rest, ok := strings.CutPrefix(s, "//"); ok {
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		if err := checkAuthority(rest[:end]); err != nil {
			return err
		}
		s = rest[end:]
	} else if relative {
		first, _, _ := strings.Cut(s, "/")
		if strings.IndexByte(first, ':') >= 0 {
			return errors.New("colon in the first path segment of a relative reference")
		}
	}
	return checkChars(s, "/", "path")
}

// checkAuthority checks [userinfo "@"] host [":" port].
func checkAuthority(s string) error {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		if err := checkChars(s[:i], ":", "userinfo"); err != nil {
			return err
		}
		s = s[i+1:]
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return errors.New("unterminated IP literal")
		}
		if err := checkIPLiteral(s[1:end]); err != nil {
			return err
		}
		host, port = "", s[end+1:]
		if port != "" && port[0] != ':' {
			return errors.New("unexpected characters after IP literal")
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i:]
	}
	for i := 1; i < len(port); i++ {
		if !isDigit(port[i]) {
			return errors.New("port must be digits")
		}
	}
	return checkChars(host, "", "host")
}

// checkIPLiteral checks the inside of "[...]": an IPv6 address without a
// zone, or IPvFuture.
func checkIPLiteral(s string) error {
	if len(s) > 0 && (s[0] == 'v' || s[0] == 'V') {
		ver, rest, ok := strings.Cut(s[1:], ".")
		if !ok || ver == "" || strings.Trim(ver, "0123456789abcdefABCDEF") != "" || rest == "" {
			return errors.New("invalid IPvFuture literal")
		}
		return checkChars(rest, ":", "IPvFuture literal")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return errors.New("invalid IPv6 literal")
	}
	return nil
}

// checkChars checks that s holds only unreserved characters, sub-delims,
// percent-encoded octets and the bytes in extra; pchar-based components
// (path, query, fragment) also allow ":" and "@".
func checkChars(s, extra, what string) error {
	pchar := what == "path" || what == "query" || what == "fragment"
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case isUnreserved(b) || isSubDelim(b) || strings.IndexByte(extra, b) >= 0:
		case pchar && (b == ':' || b == '@'):
		case b == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Errorf("invalid percent-encoding in %s", what)
			}
			i += 2
		case b >= 0x80:
			return fmt.Errorf("non-ASCII byte 0x%02x not allowed in %s", b, what)
		default:
			return fmt.Errorf("character %q not allowed in %s", rune(b), what)
		}
	}
	return nil
}

func isUnreserved(b byte) bool {
	return isAlpha(b) || isDigit(b) || b == '-' || b == '.' || b == '_' || b == '~'
}

func isSubDelim(b byte) bool { return strings.IndexByte("!$&'()*+,;=", b) >= 0 }

func isHex(b byte) bool { return isDigit(b) || ((b|0x20) >= 'a' && (b|0x20) <= 'f') }
