package mesh

import "strings"

// An operator may word a broadcast themselves. The text the desk proposes
// is the aggregation's; what the operator changes in it is their own
// speech, which the seed lets a broadcast carry: it forbids only claims
// the operator did not approve, and a claim the operator writes is one
// they approve. The order records the change as the operator's (its
// operator_edit member, which the approval decision entry carries among
// the approved arguments, bound by the digest), and the broadcast check
// allows a claim the aggregation does not hold only when that record
// shows the operator wrote it.

// textEdit is the word-by-word change from a proposed text to the text
// approved: the words kept, the words the operator deleted and those they
// inserted, in order.
type textEdit struct {
	ops []editOp
}

// editOp is one word of an edit.
type editOp struct {
	kind byte // '=' kept, '-' deleted, '+' inserted
	word string
}

// diffText returns the edit from proposed to approved, over their words
// (runs of non-space characters): a longest common subsequence of words
// is kept, and within a change the deletions come before the insertions.
func diffText(proposed, approved string) textEdit {
	a, b := strings.Fields(proposed), strings.Fields(approved)
	// lcs[i][j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var e textEdit
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			e.ops = append(e.ops, editOp{'=', a[i]})
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && lcs[i+1][j] >= lcs[i][j+1]:
			e.ops = append(e.ops, editOp{'-', a[i]})
			i++
		default:
			e.ops = append(e.ops, editOp{'+', b[j]})
			j++
		}
	}
	return e
}

// changed reports whether the edit deletes or inserts anything.
func (e textEdit) changed() bool {
	for _, op := range e.ops {
		if op.kind != '=' {
			return true
		}
	}
	return false
}

// inserted returns the words the operator inserted, joined by spaces.
func (e textEdit) inserted() string {
	var words []string
	for _, op := range e.ops {
		if op.kind == '+' {
			words = append(words, op.word)
		}
	}
	return strings.Join(words, " ")
}

// String renders the edit as GNU wdiff does: the words kept as they are,
// each run of deleted words as [-words-] and each run of inserted words
// as {+words+}; "" for an edit that changes nothing.
func (e textEdit) String() string {
	if !e.changed() {
		return ""
	}
	var runs []string
	for k := 0; k < len(e.ops); {
		n := k + 1
		for n < len(e.ops) && e.ops[n].kind == e.ops[k].kind {
			n++
		}
		words := make([]string, 0, n-k)
		for _, op := range e.ops[k:n] {
			words = append(words, op.word)
		}
		open, closing := editMarks(e.ops[k].kind)
		runs = append(runs, open+strings.Join(words, " ")+closing)
		k = n
	}
	return strings.Join(runs, " ")
}

// editMarks returns the wdiff marks around a run of words of kind.
func editMarks(kind byte) (string, string) {
	switch kind {
	case '-':
		return "[-", "-]"
	case '+':
		return "{+", "+}"
	}
	return "", ""
}
