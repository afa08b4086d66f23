package peas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxExactInt bounds the integers rewritten: below 2^53 a float64 holds
// every integer, so the rewritten literal has the value that was written.
const maxExactInt = 1 << 53

// integralNumbers returns doc with every number whose value is an integer
// written as one ("1800.0" and "3e2" become 1800 and 300), members and
// elements kept in order. JSON Schema counts 1800.0 as an integer, so a
// document the contract accepts must decode into Go int fields as well:
// the handlers decode what integralNumbers returns.
func integralNumbers(doc []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var out bytes.Buffer
	var open []container
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) && len(open) == 0 {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read JSON at offset %d: %w", d.InputOffset(), err)
		}
		if delim, ok := tok.(json.Delim); ok && (delim == '}' || delim == ']') {
			out.WriteByte(byte(delim))
			open = open[:len(open)-1]
			continue
		}
		if n := len(open); n > 0 {
			out.WriteString(open[n-1].separator())
			open[n-1].tokens++
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			open = append(open, container{object: v == '{'})
		case json.Number:
			out.WriteString(integral(v))
		default:
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encode JSON value: %w", err)
			}
			out.Write(raw)
		}
	}
}

// container is an open object or array and how many keys, values and
// elements it has had.
type container struct {
	object bool
	tokens int
}

// separator returns what goes before the container's next token.
func (c container) separator() string {
	switch {
	case c.object && c.tokens%2 == 1:
		return ":"
	case c.tokens > 0:
		return ","
	}
	return ""
}

// integral returns n written as an integer when its value is one that a
// float64 holds exactly, else n as it was written.
func integral(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= maxExactInt {
		return s
	}
	return strconv.FormatInt(int64(f), 10)
}
