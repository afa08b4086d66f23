package format

import (
	"net/url"
	"testing"
)

func TestCheckURIForbiddenCharacters(t *testing.T) {
	// Each of these is accepted by net/url.Parse in a path, and each is
	// outside RFC 3986.
	tests := []struct{ name, s string }{
		{"ErrSpace", "https://example.org/foo bar"},
		{"ErrLessThan", "https://example.org/foo<bar"},
		{"ErrGreaterThan", "https://example.org/foo>bar"},
		{"ErrOpenBrace", "https://example.org/foo{bar"},
		{"ErrCloseBrace", "https://example.org/foo}bar"},
		{"ErrPipe", "https://example.org/foo|bar"},
		{"ErrCaret", "https://example.org/foo^bar"},
		{"ErrBacktick", "https://example.org/foo`bar"},
		{"ErrBackslash", `https://example.org/foo\bar`},
		{"ErrDoubleQuote", `https://example.org/foo"bar`},
		{"ErrNonASCII", "https://example.org/caf\u00e9"},
		{"ErrOpenBracketInPath", "https://example.org/foo[bar"},
		{"ErrCloseBracketInPath", "https://example.org/foo]bar"},
		{"ErrSpaceInQuery", "https://example.org/?q=a b"},
		{"ErrHashInFragment", "https://example.org/#a#b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := url.Parse(tc.s); err != nil {
				t.Logf("note: net/url rejects %q too", tc.s)
			}
			if err := URI(tc.s); err == nil {
				t.Errorf("URI(%q) accepted it", tc.s)
			}
			if err := URIReference(tc.s); err == nil {
				t.Errorf("URIReference(%q) accepted it", tc.s)
			}
		})
	}
}

func TestCheckURI(t *testing.T) {
	tests := []struct {
		name, s string
		uri     bool // valid as a URI
		ref     bool // valid as a URI reference
	}{
		{"OKHTTP", "https://example.org/a/b?c=d&e=f#g", true, true},
		{"OKPercent", "https://example.org/a%20b", true, true},
		{"OKUserinfoPort", "ftp://user:pw@example.org:21/x", true, true},
		{"OKIPv6", "http://[2001:db8::7]/c=GB?objectClass?one", true, true},
		{"OKIPv4In6", "http://[::ffff:192.168.0.1]/", true, true},
		{"OKIPvFuture", "http://[v1.fe80::a+en1]/", true, true},
		{"OKURN", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", true, true},
		{"OKMailto", "mailto:John.Doe@example.com", true, true},
		{"OKEmptyAuthority", "file:///etc/hosts", true, true},
		{"OKEmptyPort", "http://example.org:/", true, true},
		{"OKSchemeChars", "a+b-c.d:x", true, true},
		{"OKRelativePath", "a/b", false, true},
		{"OKAbsolutePath", "/a/b", false, true},
		{"OKNetworkPath", "//example.org/a", false, true},
		{"OKQueryOnly", "?q=1", false, true},
		{"OKFragmentOnly", "#/$defs/x", false, true},
		{"OKEmpty", "", false, true},
		{"OKDotColon", "./a:b", false, true},
		{"ErrColonFirstSegment", "1:b", false, false},
		{"ErrBadPercent", "https://example.org/%zz", false, false},
		{"ErrShortPercent", "https://example.org/%a", false, false},
		{"ErrTwoAts", "//a@b@example.org/", false, false},
		{"ErrPortLetters", "http://example.org:8o/", false, false},
		{"ErrUnclosedIPv6", "http://[::1/", false, false},
		{"ErrIPv6Zone", "http://[fe80::1%25eth0]/", false, false},
		{"ErrIPv4Leading0In6", "http://[::ffff:192.168.0.01]/", false, false},
		{"ErrBracketHost", "http://ex[a]mple.org/", false, false},
		{"ErrSchemeComma", "bar,baz:foo", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := URI(tc.s); (err == nil) != tc.uri {
				t.Errorf("URI(%q) = %v, want valid=%v", tc.s, err, tc.uri)
			}
			if err := URIReference(tc.s); (err == nil) != tc.ref {
				t.Errorf("URIReference(%q) = %v, want valid=%v", tc.s, err, tc.ref)
			}
		})
	}
}

func TestCheckDateTime(t *testing.T) {
	tests := []struct {
		name, s string
		ok      bool
	}{
		{"OK", "2026-08-14T21:04:00Z", true},
		{"OKFraction", "2026-08-14T21:04:00.123456789Z", true},
		{"OKOffset", "2026-08-14T21:04:00+05:30", true},
		{"OKLowercase", "2026-08-14t21:04:00z", true},
		{"OKLeapDay", "2024-02-29T00:00:00Z", true},
		{"OKLeap2000", "2000-02-29T00:00:00Z", true},
		{"OKLeapSecond", "1998-12-31T23:59:60Z", true},
		{"OKLeapSecondOffset", "1998-12-31T15:59:60-08:00", true},
		{"OKLeapSecondAcrossMidnight", "1999-01-01T00:29:60+00:30", true},
		{"ErrSpace", "2026-08-14 21:04:00Z", false},
		{"ErrNoOffset", "2026-08-14T21:04:00", false},
		{"ErrShortOffset", "2026-08-14T21:04:00+01", false},
		{"ErrSignedHour", "2026-08-14T+1:04:00Z", false},
		{"ErrSignedOffset", "2026-08-14T21:04:00++1:00", false},
		{"ErrNoLeapDay", "2100-02-29T00:00:00Z", false},
		{"ErrDay31", "2026-04-31T00:00:00Z", false},
		{"ErrMonth13", "2026-13-01T00:00:00Z", false},
		{"ErrHour24", "2026-08-14T24:00:00Z", false},
		{"ErrMinute60", "2026-08-14T21:60:00Z", false},
		{"ErrSecond61", "2026-08-14T23:59:61Z", false},
		{"ErrLeapSecondWrongMinute", "2026-08-14T23:58:60Z", false},
		{"ErrEmptyFraction", "2026-08-14T21:04:00.Z", false},
		{"ErrOffsetHour", "2026-08-14T21:04:00+24:00", false},
		{"ErrTrailingNewline", "2026-08-14T21:04:00Z\n", false},
		{"ErrZAfterOffset", "2026-08-14T21:04:00+01:00Z", false},
		{"ErrExtendedYear", "+12026-08-14T21:04:00Z", false},
		{"ErrNonASCIIDigit", "2026-08-1\u09eaT21:04:00Z", false},
		{"ErrDateOnly", "2026-08-14", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := DateTime(tc.s); (err == nil) != tc.ok {
				t.Errorf("DateTime(%q) = %v, want valid=%v", tc.s, err, tc.ok)
			}
		})
	}
}
