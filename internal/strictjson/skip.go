package strictjson

// Skip steps over the value at Pos, the depth-th nested one (0 for a
// document's value), for a reader that needs to know only where a value
// ends, before something else reads it. It checks the value's syntax and
// its strings, as Decode does, but not the rules that need the value read:
// a duplicate key or a number beyond the number rules passes. It leaves
// the space after the value.
func (d *Reader) Skip(depth int) error {
	switch d.Peek() {
	case '"':
		_, err := d.StringBytes()
		return err
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return d.SkipNumber()
	case '{', '[':
		if err := d.Nest(depth + 1); err != nil {
			return err
		}
		return d.skipContainer(depth + 1)
	case 't':
		return d.Literal("true")
	case 'f':
		return d.Literal("false")
	case 'n':
		return d.Literal("null")
	}
	return d.Unexpected()
}

// skipContainer steps over the object or array at Pos.
func (d *Reader) skipContainer(depth int) error {
	object := d.In[d.Pos] == '{'
	closer, name := byte(']'), "array"
	if object {
		closer, name = '}', "object"
	}
	d.Pos++
	d.SkipSpace()
	if d.Peek() == closer {
		d.Pos++
		return nil
	}
	for {
		if object {
			if _, _, err := d.Key(d.buf[:0]); err != nil {
				return err
			}
		}
		if err := d.Skip(depth); err != nil {
			return err
		}
		d.SkipSpace()
		switch d.Peek() {
		case ',':
			d.Pos++
			d.SkipSpace()
		case closer:
			d.Pos++
			return nil
		default:
			return d.endOf(name, closer)
		}
	}
}
