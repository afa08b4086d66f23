package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/custody-dev/custody/systems"
)

// defaultProgressEvery is how often a long run reports its progress on
// a stderr that is not a terminal: often enough that a log shows it
// alive, seldom enough not to fill it.
const defaultProgressEvery = 10 * time.Second

// progressRedraw is how often the bar on a terminal is redrawn.
const progressRedraw = 200 * time.Millisecond

// progressLine reports how far a long run over a ledger is: on a terminal
// a bar redrawn in place, elsewhere a plain line every so often. A run
// that ends before the first report shows nothing.
type progressLine struct {
	w     io.Writer
	what  string // the command, as error lines name it
	tty   bool
	every time.Duration
	start time.Time
	last  time.Time
	drawn bool
}

// newProgress returns the progress of what, reported on m's stderr.
func (m *Main) newProgress(what string) *progressLine {
	now := time.Now()
	p := &progressLine{w: m.Stderr, what: what, tty: systems.IsTerminal(m.Stderr), every: m.ProgressEvery, start: now, last: now}
	if p.tty {
		p.every = progressRedraw
	} else if p.every <= 0 {
		p.every = defaultProgressEvery
	}
	return p
}

// report says that done of total entries are done.
func (p *progressLine) report(done, total int64) {
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	rate := float64(done) / max(now.Sub(p.start).Seconds(), 1e-9)
	pct := 100 * done / max(total, 1)
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d of %d entries (%d%%), %.0f entries/s\n", p.what, done, total, pct, rate)
		return
	}
	const width = 30
	n := int(width * done / max(total, 1))
	fmt.Fprintf(p.w, "\r  [%s%s] %d/%d entries, %.0f/s ", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, rate)
	p.drawn = true
}

// end finishes the bar's line on a terminal, so that what follows starts
// on a line of its own.
func (p *progressLine) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
