package peas

import (
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// TestRestates: a warning may say the sign's claims in spoken form, and
// nothing else; a refusal names the claim that is not on the sign.
func TestRestates(t *testing.T) {
	const pileUp = "WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW"
	tests := []struct {
		name, sign, warning string
		claim               string // a part of the refusal; "" when accepted
	}{
		{"OKSentenceCase", pileUp, "Slow down now.", ""},
		{"OKWholeSign", pileUp, "Whiteout. Pile-up ahead. Slow down now!", ""},
		{"OKPileUpSpaced", pileUp, "Whiteout, pile up ahead, slow down now", ""},
		{"OKClausesReordered", pileUp, "Slow down now: whiteout, pile-up ahead.", ""},
		{"OKFillers", pileUp, "Please slow down now. The whiteout and the pile-up are ahead.", ""},
		{"OKArticles", pileUp, "A whiteout and a pile-up are ahead. Please slow down now.", ""},
		{"ErrBridge", pileUp, "Bridge collapsed ahead. Turn around and exit now.", `"bridge" is not on the sign`},
		{"ErrTornado", pileUp, "Tornado warning. Take shelter under the overpass.", `"tornado" is not on the sign`},
		{"ErrNumberInWords", pileUp, "slow to thirty miles per hour", `"thirty" (30) is not on the sign`},
		{"ErrDigits", pileUp, "Slow to 30 mph.", `"30" is not on the sign`},
		{"ErrAllClear", pileUp, "All clear, speed up.", `"clear" is not on the sign`},
		{"ErrNeutralSounding", pileUp, "Warning: slow down now.", `"warning" is not on the sign`},
		{"OKWordsForDigits", "SLOW TO 30", "Slow to thirty.", ""},
		{"OKDigitsForWords", "SLOW TO THIRTY", "Slow to 30.", ""},
		{"OKCompoundNumber", "SLOW TO 35", "Slow to thirty-five.", ""},
		{"OKHundreds", "DETOUR 120", "Detour one hundred and twenty.", ""},
		{"ErrOtherNumber", "SLOW TO THIRTY", "Slow to 40.", `"40" is not on the sign`},
		{"ErrOtherNumberInWords", "SLOW TO 30", "Slow to forty.", `"forty" (40) is not on the sign`},
		{"OKDistanceDigits", "CRASH 2 MILES AHEAD", "Crash two miles ahead.", ""},
		{"OKDistanceWords", "CRASH TWO MILES AHEAD", "Crash 2 miles ahead.", ""},
		{"ErrDistance", "CRASH AHEAD", "Crash 2 miles ahead.", `"2" is not on the sign`},
		{"ErrDistanceUnit", "CRASH 2 MILES AHEAD", "Crash 2 kilometers ahead.", `"kilometers" is not on the sign`},
		{"ErrBehind", "CRASH AHEAD", "Crash behind.", `"behind" is not on the sign`},
		{"OKPlaceRestated", "ICE NEAR GALESBURG. SLOW DOWN", "Ice near Galesburg. Slow down.", ""},
		{"ErrPlace", "ICE NEAR GALESBURG. SLOW DOWN", "Ice near Kalamazoo. Slow down.", `"kalamazoo" is not on the sign`},
		{"OKTime", "LANES CLOSED UNTIL 5 PM", "Lanes closed until five pm.", ""},
		{"ErrTime", "LANES CLOSED", "Lanes closed until 5 pm.", `"until" is not on the sign`},
		{"ErrOrder", "SLOW DOWN. DO NOT STOP", "Stop. Do not slow down.", `"do not slow down" is not on the sign`},
		{"ErrDroppedNegation", "DO NOT STOP", "Stop.", "negation"},
		{"OKContraction", "DO NOT STOP", "Don't stop.", ""},
		{"ErrAddedNegation", "STOP", "Do not stop.", `"do" is not on the sign`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := restates(tt.warning, tt.sign)
			ok := strings.HasPrefix(tt.name, "OK")
			if ok {
				if err != nil {
					t.Fatalf("%q under %q refused: %v", tt.warning, tt.sign, err)
				}
				return
			}
			e := custody.AsError(err)
			if err == nil || e.Kind != custody.EINVALID || len(e.Violations) == 0 {
				t.Fatalf("%q under %q: err %v, want an EINVALID refusal", tt.warning, tt.sign, err)
			}
			if !strings.Contains(e.Message, tt.claim) {
				t.Fatalf("refusal %q does not name %s", e.Message, tt.claim)
			}
			for _, v := range e.Violations {
				if v.Instance != "/warning_text" || v.Keyword != "restates_sign" {
					t.Fatalf("violation %+v", v)
				}
			}
		})
	}
}

// TestSpokenRestatesItsSign: the planner's spoken form of a sign passes
// the rule it is checked by.
func TestSpokenRestatesItsSign(t *testing.T) {
	for _, sign := range []string{"WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW", "SNOW AND ICE AHEAD. SLOW DOWN", "STOP. WHITEOUT AHEAD!", "SLOW TO 30"} {
		w := spoken(sign)
		if err := restates(w, sign); err != nil {
			t.Errorf("spoken(%q) = %q refused: %v", sign, w, err)
		}
	}
	if got := spoken("WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW"); got != "Whiteout. Pile-up ahead. Slow down now." {
		t.Errorf("spoken = %q", got)
	}
}
