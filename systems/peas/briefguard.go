package peas

import "github.com/custody-dev/custody/systems/guard"

// briefMaxWords is the length bound of an ops brief: readable at a glance
// on a phone.
const briefMaxWords = 200

// sensorTerms are the measurements a brief may only mention when its facts
// do: a brief that brings up humidity or ice when no sensor reported it
// states a field absent from the signature.
func sensorTerms() []string {
	return []string{
		"wind", "gust", "gusts", "humidity", "dew", "ice", "icy", "black",
		"snow", "sleet", "rain", "freezing", "fog", "hail", "whiteout",
		"temperature", "visibility", "speed", "crash", "crashes", "fatality",
		"fatalities", "injuries", "vehicles", "trucks", "closed", "closure",
	}
}

// briefGuard is what an ops brief is checked against.
type briefGuard struct {
	// Signature is the detector's signature as JSON.
	Signature string
	// Comparisons are the historical comparisons as JSON; may be empty.
	Comparisons string
	// Template is the deterministic brief: whatever it states is allowed.
	Template string
	// Citations are phrases of which one must appear (a comparison's key,
	// "Galesburg"); empty when no citation is required.
	Citations []string
	// MaxWords bounds the length; 0 means briefMaxWords.
	MaxWords int
}

// check returns the brief guard: it refuses a brief that states a number,
// place, field or sensor term absent from the signature, comparisons and
// template, that drops the required citation, or that is too long.
func (b briefGuard) check() guard.Check {
	facts := guard.NewFacts(b.Signature, b.Comparisons, b.Template)
	max := b.MaxWords
	if max == 0 {
		max = briefMaxWords
	}
	return guard.All(
		guard.MaxWords(max),
		guard.RequireAny(b.Citations...),
		facts.OnlyNumbers(),
		facts.OnlyNames(),
		facts.OnlyFields(),
		facts.OnlyTerms(sensorTerms()...),
	)
}
