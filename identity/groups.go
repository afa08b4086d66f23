package identity

import (
	"slices"
	"sync"
)

// maxDirectory bounds the principals a Directory remembers.
const maxDirectory = 10000

// Directory remembers the groups of the principals whose tokens were
// accepted, so that a policy that knows only a call's actor (the
// principal's ID) can ask for them. The groups are those of the
// principal's latest accepted token. It is safe for concurrent use.
type Directory struct {
	mu sync.RWMutex
	m  map[string][]string
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory { return &Directory{m: map[string][]string{}} }

// Remember records p's groups under its ID.
func (d *Directory) Remember(p Principal) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, known := d.m[p.ID()]; !known && len(d.m) >= maxDirectory {
		clear(d.m) // a new token re-records its principal on its next request
	}
	d.m[p.ID()] = slices.Clone(p.Groups)
}

// Groups returns the groups of the principal whose ID is id: none for one
// never seen. A nil directory knows none.
func (d *Directory) Groups(id string) []string {
	if d == nil {
		return nil
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.m[id]
}
