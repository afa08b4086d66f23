package otelspan

import "time"

// WithIdle sets how long a chain's root span stays open without a hop
// (DefaultIdle when d ≤ 0): a chain that is never finished, such as one an
// outside agent abandons, is ended on the next Start after that.
func WithIdle(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.idle = d
		}
	}
}

// WithClock sets the clock the idle timeout is measured on.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}
