package custody

import "time"

// TimeFormat is the one layout used for every time written to the ledger:
// RFC 3339, UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in TimeFormat. Every ledger entry carries one, so
// the digits are written directly rather than by interpreting the layout.
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeFormat)
	}
	hour, min, sec := t.Clock()
	var b [len(TimeFormat)]byte
	put := func(i, v, width int) {
		for j := i + width - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, min, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/1000, 6)
	b[26] = 'Z'
	return string(b[:])
}
