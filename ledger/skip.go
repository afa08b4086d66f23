package ledger

// skip steps over the JSON value at c.pos, checking its syntax, strings
// included, but not the rules of canonical form: duplicate keys and
// integers beyond ±2^53 pass. It finds where a value ends without the
// cost of canonicalizing it.
func (c *canon) skip(depth int) error {
	if c.pos >= len(c.in) {
		return c.fail("unexpected end of JSON")
	}
	switch b := c.in[c.pos]; {
	case b == '"':
		s, escaped, err := c.str(c.sbuf[:0])
		if escaped {
			c.sbuf = s
		}
		return err
	case b == '-' || (b >= '0' && b <= '9'):
		if b == '-' {
			c.pos++
		}
		if err := c.intPart(); err != nil {
			return err
		}
		return c.fracExp()
	case b == '{' || b == '[':
		if depth >= maxDepth {
			return c.fail("nesting deeper than %d", maxDepth)
		}
		return c.skipContainer(depth)
	case b == 't':
		return c.expectLiteral("true")
	case b == 'f':
		return c.expectLiteral("false")
	case b == 'n':
		return c.expectLiteral("null")
	default:
		return c.fail("unexpected character %q", b)
	}
}

// skipContainer steps over the object or array at c.pos.
func (c *canon) skipContainer(depth int) error {
	object := c.in[c.pos] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	c.pos++
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == closer {
		c.pos++
		return nil
	}
	for {
		if object {
			if err := c.skipKey(); err != nil {
				return err
			}
		}
		if err := c.skip(depth + 1); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.fail("unexpected end of JSON in %s", containerName(object))
		}
		if c.in[c.pos] == closer {
			c.pos++
			return nil
		}
		if c.in[c.pos] != ',' {
			return c.fail("expected ',' or '%c' in %s", closer, containerName(object))
		}
		c.pos++
		c.skipSpace()
	}
}

// skipKey steps over an object key, its colon and the space around them.
func (c *canon) skipKey() error {
	if c.pos >= len(c.in) || c.in[c.pos] != '"' {
		return c.fail("expected an object key")
	}
	if _, _, err := c.str(nil); err != nil {
		return err
	}
	c.skipSpace()
	if c.pos >= len(c.in) || c.in[c.pos] != ':' {
		return c.fail("expected ':' after object key")
	}
	c.pos++
	c.skipSpace()
	return nil
}

func containerName(object bool) string {
	if object {
		return "object"
	}
	return "array"
}
