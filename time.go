package custody

import "time"

// TimeFormat is the one layout used for every time written to the ledger:
// RFC 3339, UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in TimeFormat.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeFormat)
}
