package guard

import (
	_ "embed"
	"strings"
	"sync"
)

// english.txt is the lowercase entries of SCOWL's size-35 American English
// list (Debian's wamerican-small): common words, inflections included, and
// no proper names, which the list only holds capitalized. Its notice is in
// english.LICENSE.
//
//go:embed english.txt
var englishList string

// english is the set of words in englishList, built on first use.
var english = sync.OnceValue(func() map[string]struct{} {
	words := strings.Fields(englishList)
	set := make(map[string]struct{}, len(words))
	for _, w := range words {
		set[w] = struct{}{}
	}
	return set
})

// isEnglishWord reports whether w, lowercased, is a common English word.
func isEnglishWord(w string) bool {
	_, ok := english()[strings.ToLower(w)]
	return ok
}
