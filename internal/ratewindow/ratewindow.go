// Package ratewindow is the layout of the state rows that count the calls
// of one window of one rate limit: the gateway writes them (gate.Gateway
// counts each call that runs against its tool's limits) and the stores
// prune them once their window is long past, each reading the key with
// this one function so that the two never disagree.
package ratewindow

import (
	"encoding/json"
	"strconv"
	"time"
)

// NS is the state namespace of the rate windows.
const NS = "rate"

// Key is the state key of the window of length every that starts at
// start, for the limit per (agent, tool, trace or global) and the names
// who and what. Windows are fixed, aligned on the Unix epoch, so that
// every gateway agrees on them. The key is a JSON array, so that no
// choice of names makes two keys alike.
func Key(per, who, what string, every time.Duration, start time.Time) string {
	b, _ := json.Marshal([5]string{per, who, what, every.String(), strconv.FormatInt(start.Unix(), 10)})
	return string(b)
}

// Window returns the start and the length of the window key names; ok is
// false for a key not of Key's layout.
func Window(key string) (start time.Time, every time.Duration, ok bool) {
	var k [5]string
	if err := json.Unmarshal([]byte(key), &k); err != nil {
		return time.Time{}, 0, false
	}
	every, err := time.ParseDuration(k[3])
	if err != nil || every <= 0 {
		return time.Time{}, 0, false
	}
	sec, err := strconv.ParseInt(k[4], 10, 64)
	if err != nil {
		return time.Time{}, 0, false
	}
	return time.Unix(sec, 0), every, true
}

// Stale reports whether the window key names ended a whole window of its
// own length before now: no gateway whose clock is less than a window off
// counts in it again, so its row can go. A key not of Key's layout is
// never stale.
func Stale(key string, now time.Time) bool {
	start, every, ok := Window(key)
	return ok && !now.Before(start.Add(2*every))
}

// PruneEvery is how often a store looks for stale windows.
const PruneEvery = time.Minute
