package mesh

// Tier is a hazard alert tier (tier_enum): info < warning < critical <
// emergency.
type Tier string

// The four tiers, lowest first.
const (
	Info      Tier = "info"
	Warning   Tier = "warning"
	Critical  Tier = "critical"
	Emergency Tier = "emergency"
)

// tiers lists the tiers, lowest first.
func tiers() []Tier { return []Tier{Info, Warning, Critical, Emergency} }

// Rank orders the tiers from 0 (info) to 3 (emergency); an unknown tier
// ranks -1.
func (t Tier) Rank() int {
	switch t {
	case Info:
		return 0
	case Warning:
		return 1
	case Critical:
		return 2
	case Emergency:
		return 3
	}
	return -1
}

// Valid reports whether t is one of the four tiers.
func (t Tier) Valid() bool { return t.Rank() >= 0 }

// Raise returns the next tier up, capped at emergency.
func (t Tier) Raise() Tier {
	switch t {
	case Info:
		return Warning
	case Warning:
		return Critical
	}
	return Emergency
}

// Cap returns t, or limit when t ranks above it.
func (t Tier) Cap(limit Tier) Tier {
	if t.Rank() > limit.Rank() {
		return limit
	}
	return t
}

// MaxTier returns the higher of a and b.
func MaxTier(a, b Tier) Tier {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}
