package ledger

import "github.com/custody-dev/custody"

// PageSize is how many entries a Pager hands its verifier at once.
const PageSize = 1024

// Pager feeds a Verifier from a store's walk of its ledger, an entry and a
// checkpoint at a time: it hands the verifier entries a page at a time, so
// that hashing runs on every CPU, and settles the page before each
// checkpoint, which must see every entry it covers.
type Pager struct {
	v    *Verifier
	page []custody.Entry
}

// NewPager returns a pager feeding v.
func NewPager(v *Verifier) *Pager {
	return &Pager{v: v, page: make([]custody.Entry, 0, PageSize)}
}

// Entry takes the next entry in seq order.
func (p *Pager) Entry(e *custody.Entry) error {
	if p.page = append(p.page, *e); len(p.page) == PageSize {
		return p.flush()
	}
	return nil
}

// Checkpoint takes a checkpoint, after the entries it covers.
func (p *Pager) Checkpoint(cp custody.Checkpoint) error {
	if err := p.flush(); err != nil {
		return err
	}
	return p.v.Checkpoint(cp)
}

// Finish settles the last page and returns the verifier's report.
func (p *Pager) Finish() (Report, error) {
	if err := p.flush(); err != nil {
		return Report{}, err
	}
	return p.v.Finish()
}

func (p *Pager) flush() error {
	err := p.v.Entries(p.page)
	p.page = p.page[:0]
	return err
}
