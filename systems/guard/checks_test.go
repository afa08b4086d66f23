package guard_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/guard"
)

func TestNumbersNormalize(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"TrailingZeros", "0.50 and 2.000", []string{"0.5", "2"}},
		{"LeadingZeros", "route 007", []string{"7"}},
		{"ThousandsWithFraction", "1,200.50 USD", []string{"1200.5"}},
		{"BadGrouping", "1,2345", []string{"1234", "5"}},
		{"CommaSeparated", "3, 4 and 5", []string{"3", "4", "5"}},
		{"SentenceEnd", "It fell to 12.", []string{"12"}},
		{"TwoDots", "v3.14.15", []string{"3.14", "15"}},
		{"Exponent", "1e5", []string{"1", "5"}},
		{"Repeated", "5 then 5.0", []string{"5", "5"}},
		{"NonASCIIDigits", "٣ ٤", nil},
		{"Empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guard.Numbers(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Numbers(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestNumbersCompareByValue: the forms of one value normalize alike, and
// a number past a million is one value however it is grouped.
func TestNumbersCompareByValue(t *testing.T) {
	for _, forms := range [][]string{
		{"1,234,567", "1234567", "1234567.0", "01234567"},
		{"1,000,000", "1000000", "1000000.000"},
		{"0.5", "0.50", "00.5"},
	} {
		want := guard.Numbers(forms[0])
		for _, f := range forms[1:] {
			if got := guard.Numbers(f); len(got) != 1 || !reflect.DeepEqual(got, want) {
				t.Errorf("Numbers(%q) = %q, want %q as for %q", f, got, want, forms[0])
			}
		}
	}
	if a, b := guard.Numbers("1,234,567"), guard.Numbers("1,234,568"); reflect.DeepEqual(a, b) {
		t.Errorf("distinct numbers normalize alike: %q", a)
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"Lowercased", "Snow FALLS", []string{"snow", "falls"}},
		{"Apostrophe", "don't stop", []string{"don't", "stop"}},
		{"CurlyApostropheHyphen", "O’Brien-Smith", []string{"o’brien-smith"}},
		{"DigitsSplit", "3rd I94x", []string{"rd", "i", "x"}},
		{"JSON", `{"visibility_ft":300}`, []string{"visibility", "ft"}},
		{"None", "42 !", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guard.Words(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Words(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestWordCountBoundaries(t *testing.T) {
	for text, want := range map[string]int{"": 0, "   ": 0, "one": 1, "a\tb\nc  d": 4, "I-94, slow.": 2} {
		if got := guard.WordCount(text); got != want {
			t.Errorf("WordCount(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"Snake", "visibility_ft is low", []string{"visibility_ft"}},
		{"Several", "a_b_c and pm2_5.", []string{"a_b_c", "pm2_5"}},
		{"InJSON", `{"location_id":"x","speed_mph":5}`, []string{"location_id", "speed_mph"}},
		{"NotCapitalized", "Location_ID or VISIBILITY_FT", nil},
		{"NotEdges", "_x and x_ and x__y", nil},
		{"NoUnderscore", "visibility", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guard.Fields(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Fields(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestNamesCases(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"Empty", "", nil},
		{"NameOpensText", "Toledo saw worse", []string{"Toledo"}},
		{"CommonWordOpensText", "Traffic is slow", nil},
		{"CommonWordMidSentence", "slow, Traffic is", []string{"Traffic"}},
		{"AfterQuestion", "Why? Drivers slow", nil},
		{"AfterColon", "note: Snow", nil},
		{"AfterNewline", "slow\nTraffic", nil},
		{"ListItem", "- Traffic\n- Kalamazoo", []string{"Kalamazoo"}},
		{"QuotedOpening", `"Snow" falls`, nil},
		{"ParenOpening", "(Traffic slows)", nil},
		{"SingleLetter", "I think A is", nil},
		{"InsideToken", "iPhone and 5G and KX88", []string{"KX"}},
		{"AfterDigit", "9Toledo", nil},
		{"AfterUnderscore", "x_Toledo", nil},
		{"CapitalizedRun", "near NOAA today", []string{"NOAA"}},
		{"Repeated", "near Toledo and Toledo", []string{"Toledo", "Toledo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guard.Names(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Names(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// refusal returns the violations of a refused text, failing the test when
// err is not the EINVALID refusal a check returns.
func refusal(t *testing.T, err error) []custody.Violation {
	t.Helper()
	var e *custody.Error
	if !errors.As(err, &e) || e.Kind != custody.EINVALID || len(e.Violations) == 0 {
		t.Fatalf("err = %v, want an EINVALID refusal with violations", err)
	}
	if !strings.HasPrefix(e.Message, "text refused: ") {
		t.Errorf("message %q", e.Message)
	}
	return e.Violations
}

func TestFactsRefusals(t *testing.T) {
	facts := guard.NewFacts(`{"visibility_ft":300,"speed_mph":0.50,"count":"1,200"}`, "Snow near galesburg. Wind ahead.")
	tests := []struct {
		name  string
		check guard.Check
		text  string
		want  []string // the violation messages; nil when the text passes
	}{
		{"OKNumberByValue", facts.OnlyNumbers(), "0.5 mph, 1200 cars, 300.0 ft", nil},
		{"OKNoNumbers", facts.OnlyNumbers(), "slow down", nil},
		{"ErrNumberOnceEach", facts.OnlyNumbers(), "250 ft, 250 again, then 7", []string{"number 250 is not in the facts", "number 7 is not in the facts"}},
		{"ErrNumberNearMiss", facts.OnlyNumbers(), "301 ft", []string{"number 301 is not in the facts"}},
		{"OKNameCaseInsensitive", facts.OnlyNames(), "as at Galesburg", nil},
		{"OKNameFromField", facts.OnlyNames(), "the Visibility is low", nil},
		{"ErrNamesOnceEach", facts.OnlyNames(), "near Toledo, Toledo and Peoria", []string{`name "Toledo" is not in the facts`, `name "Peoria" is not in the facts`}},
		{"OKField", facts.OnlyFields(), "speed_mph and visibility_ft", nil},
		{"ErrField", facts.OnlyFields(), "speed_kph", []string{"field speed_kph is not in the facts"}},
		{"OKTermInFactsCapitalized", facts.OnlyTerms("wind"), "wind rising", nil},
		{"OKTermOnlyAsPart", facts.OnlyTerms("humid"), "humidity", nil},
		{"OKTermNotSaid", facts.OnlyTerms("humidity"), "snow", nil},
		{"ErrTerms", facts.OnlyTerms("humidity", "fog", "snow"), "Fog and humidity", []string{`"humidity" is not in the facts`, `"fog" is not in the facts`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.text)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("check(%q) = %v, want pass", tt.text, err)
				}
				return
			}
			var got []string
			for _, v := range refusal(t, err) {
				got = append(got, v.Message)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("check(%q) violations %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestFactsAdd: facts added later count for checks made earlier, and no
// facts at all refuse every number.
func TestFactsAdd(t *testing.T) {
	facts := guard.NewFacts()
	check := facts.OnlyNumbers()
	if err := check("7 days"); err == nil {
		t.Fatal("a number passes with no facts")
	}
	if err := check("no digits"); err != nil {
		t.Fatalf("a text without numbers refused with no facts: %v", err)
	}
	facts.Add("a week is 7 days")
	if err := check("7 days"); err != nil {
		t.Errorf("after Add: %v", err)
	}
	if err := facts.OnlyNames()("near Galesburg"); err == nil {
		t.Error("an unknown name passes")
	}
}

func TestLengthChecks(t *testing.T) {
	tests := []struct {
		name  string
		check guard.Check
		text  string
		want  string // the violation message; "" when the text passes
	}{
		{"OKWordsAtLimit", guard.MaxWords(3), " one  two\tthree ", ""},
		{"ErrWordsOverLimit", guard.MaxWords(3), "one two three four", "4 words, at most 3 allowed"},
		{"OKWordsZeroEmpty", guard.MaxWords(0), "   ", ""},
		{"ErrWordsZero", guard.MaxWords(0), "a", "1 words, at most 0 allowed"},
		{"OKCharsRunes", guard.MaxChars(3), "日本語", ""},
		{"ErrCharsRunes", guard.MaxChars(3), "日本語x", "4 characters, at most 3 allowed"},
		{"OKCharsEmpty", guard.MaxChars(0), "", ""},
		{"ErrCharsSpaces", guard.MaxChars(2), "   ", "3 characters, at most 2 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.text)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("check(%q) = %v, want pass", tt.text, err)
				}
				return
			}
			vs := refusal(t, err)
			if len(vs) != 1 || vs[0].Keyword != "guard/length" || vs[0].Message != tt.want {
				t.Errorf("check(%q) = %+v, want guard/length %q", tt.text, vs, tt.want)
			}
		})
	}
}

func TestRequireAny(t *testing.T) {
	tests := []struct {
		name    string
		phrases []string
		text    string
		ok      bool
	}{
		{"OKFirst", []string{"Galesburg", "2015"}, "as at galesburg", true},
		{"OKSecond", []string{"Galesburg", "2015"}, "as in 2015", true},
		{"OKUpperPhrase", []string{"GALESBURG"}, "Galesburg", true},
		{"OKInsideWord", []string{"burg"}, "Galesburg", true},
		{"OKNone", nil, "", true},
		{"ErrMissing", []string{"Galesburg", "2015"}, "as in 2016", false},
		{"ErrEmptyText", []string{"x"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := guard.RequireAny(tt.phrases...)(tt.text)
			if tt.ok {
				if err != nil {
					t.Fatalf("RequireAny(%q)(%q) = %v", tt.phrases, tt.text, err)
				}
				return
			}
			vs := refusal(t, err)
			if want := `required citation "` + tt.phrases[0] + `" is missing`; len(vs) != 1 || vs[0].Keyword != "guard/citation" || vs[0].Message != want {
				t.Errorf("violations %+v, want guard/citation %q", vs, want)
			}
		})
	}
}

func TestAll(t *testing.T) {
	plain := func(string) error { return errors.New("disk detail") }
	bare := func(string) error { return custody.Errorf(custody.EINVALID, "too loud") }
	pass := func(string) error { return nil }
	facts := guard.NewFacts("300")
	tests := []struct {
		name     string
		check    guard.Check
		keywords []string // nil when the text passes
		message  string
	}{
		{"OKNoChecks", guard.All(), nil, ""},
		{"OKAllPass", guard.All(pass, guard.MaxWords(5)), nil, ""},
		{"ErrInOrder", guard.All(guard.MaxWords(1), facts.OnlyNumbers(), guard.RequireAny("x")),
			[]string{"guard/length", "guard/number", "guard/citation"},
			`text refused: 2 words, at most 1 allowed; number 250 is not in the facts; required citation "x" is missing`},
		{"ErrBareCustodyError", guard.All(bare), []string{"guard/check"}, "text refused: too loud"},
		{"ErrPlainErrorHidden", guard.All(plain, pass), []string{"guard/check"}, "text refused: internal error"},
		{"ErrNested", guard.All(guard.All(guard.MaxChars(1)), guard.MaxWords(1)), []string{"guard/length", "guard/length"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check("250 ft")
			if tt.keywords == nil {
				if err != nil {
					t.Fatalf("All = %v, want pass", err)
				}
				return
			}
			var got []string
			for _, v := range refusal(t, err) {
				got = append(got, v.Keyword)
			}
			if !reflect.DeepEqual(got, tt.keywords) {
				t.Errorf("keywords %q, want %q", got, tt.keywords)
			}
			if msg := custody.AsError(err).Message; tt.message != "" && msg != tt.message {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
			if strings.Contains(err.Error(), "disk detail") {
				t.Errorf("a plain error's text reaches the refusal: %v", err)
			}
		})
	}
}

// TestNumbersSignAndLength: a number's minus sign counts, a hyphen in a
// name or a range does not, and long numbers compare digit for digit.
func TestNumbersSignAndLength(t *testing.T) {
	for text, want := range map[string][]string{
		"drop to -5 now":       {"-5"},
		"-5 degrees":           {"-5"},
		"(−3)":                 {"-3"},
		"I-94 at MM88-EB":      {"94", "88"},
		"5-10 minutes":         {"5", "10"},
		"-0":                   {"0"},
		"12345678901234567891": {"12345678901234567891"},
		"1,234,567 vehicles":   {"1234567"},
		"0.50 and 030 and 1.0": {"0.5", "30", "1"},
	} {
		if got := guard.Numbers(text); !reflect.DeepEqual(got, want) {
			t.Errorf("Numbers(%q) = %q, want %q", text, got, want)
		}
	}
	if reflect.DeepEqual(guard.Numbers("12345678901234567891"), guard.Numbers("12345678901234567890")) {
		t.Error("two long numbers compare equal")
	}
}

// TestNamesBeyondASCII: a name that opens with a capital outside ASCII is
// a name, and a name the facts state only joined to another ("Galesburg's",
// "Kalamazoo-Portage") is stated.
func TestNamesBeyondASCII(t *testing.T) {
	f := guard.NewFacts("Compare with Galesburg's pile-up near Kalamazoo-Portage.")
	check := f.OnlyNames()
	for text, ok := range map[string]bool{
		"Galesburg saw worse.":          true,
		"Slow down near Kalamazoo.":     true,
		"Slow down near Zürich.":        false,
		"Traffic from São Paulo":        false,
		"Ürümqi is closed.":             false,
		"Portage and Galesburg, again.": true,
	} {
		if err := check(text); (err == nil) != ok {
			t.Errorf("OnlyNames(%q) = %v, want ok %v", text, err, ok)
		}
	}
	if got := guard.Names("Traffic from São Paulo"); !reflect.DeepEqual(got, []string{"São", "Paulo"}) {
		t.Errorf("Names = %q", got)
	}
}
