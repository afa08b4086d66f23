package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// envName is a variable name a dotenv file may set.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readEnvFile reads a dotenv file strictly: each line is blank, a
// "# comment", or NAME=VALUE (optionally after "export "), the value bare
// or in single or double quotes. Anything else is an error naming the
// file and the line, not a guess: a variable read wrongly reaches a
// server as a wrong credential. A relative path is relative to custody's
// working directory, like every path of the file.
func readEnvFile(p string) (map[string]string, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read the env file: %w", err)
	}
	vars := map[string]string{}
	for i, line := range strings.Split(strings.TrimPrefix(string(raw), "\ufeff"), "\n") {
		name, value, ok, err := parseEnvLine(strings.TrimSuffix(line, "\r"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", p, i+1, err)
		}
		if !ok {
			continue
		}
		if _, dup := vars[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", p, i+1, name)
		}
		vars[name] = value
	}
	return vars, nil
}

// parseEnvLine parses one line; ok is false for a blank or comment line.
func parseEnvLine(line string) (name, value string, ok bool, err error) {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return "", "", false, nil
	}
	s = strings.TrimPrefix(s, "export ")
	name, rest, found := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !found {
		return "", "", false, errors.New("not NAME=VALUE")
	}
	if !envName.MatchString(name) {
		return "", "", false, fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
	}
	value, err = envValue(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false, fmt.Errorf("%s: %w", name, err)
	}
	return name, value, true, nil
}

// envValue reads a value: quoted, with only a comment after the closing
// quote, or bare up to a " #" comment.
func envValue(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	q := s[0]
	if q != '"' && q != '\'' {
		if strings.ContainsAny(s, `"'`) {
			return "", errors.New("a quote inside a bare value: quote the whole value")
		}
		if i := strings.Index(s, " #"); i >= 0 {
			s = s[:i]
		}
		return strings.TrimSpace(s), nil
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			if tail := strings.TrimSpace(s[i+1:]); tail != "" && !strings.HasPrefix(tail, "#") {
				return "", fmt.Errorf("%q after the closing quote", tail)
			}
			return b.String(), nil
		case c == '\\' && q == '"' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '"', '\\', '$':
				b.WriteByte(s[i])
			default:
				return "", fmt.Errorf("unknown escape \\%c (known: \\n \\t \\\" \\\\ \\$)", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("the quote is not closed on its line (values span one line)")
}
