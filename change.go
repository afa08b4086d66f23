package custody

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CheckChanges refuses, with EINVALID naming the change by its index,
// the changes that are malformed whatever a store holds, and returns
// copies whose documents the caller may reuse the buffers of. Every
// store runs it in Commit before anything is written.
func CheckChanges(changes []Change) ([]Change, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	out := make([]Change, len(changes))
	for i, c := range changes {
		if err := c.check(); err != nil {
			return nil, Errorf(EINVALID, "change %d: %s", i, err)
		}
		c.Doc = bytes.Clone(c.Doc)
		out[i] = c
	}
	return out, nil
}

// check says what is malformed in c, nil when nothing is.
func (c Change) check() error {
	switch c.Op {
	case OpPutState, OpIncrState:
		switch {
		case c.NS == "" || c.Key == "":
			return fmt.Errorf("state needs a namespace and a key")
		case c.Op == OpPutState && !json.Valid(c.Doc):
			return fmt.Errorf("state %s/%s: the document is not valid JSON", c.NS, c.Key)
		case c.Op == OpIncrState && c.Limit < 0:
			return fmt.Errorf("state %s/%s: limit %d is negative", c.NS, c.Key, c.Limit)
		}
	case OpCreateApproval, OpUpdateApproval:
		if c.Approval.ID == "" || c.Approval.Status == "" {
			return fmt.Errorf("approval: id and status are required")
		}
		if c.Op == OpUpdateApproval && c.From == "" {
			return fmt.Errorf("approval %s: the status it must have is missing", c.Approval.ID)
		}
	case OpConsumeApproval:
		if c.ID == "" {
			return fmt.Errorf("approval: id is required")
		}
	default:
		return fmt.Errorf("unknown operation %d", c.Op)
	}
	return nil
}

// Refused returns what Commit answers when c's condition fails with err:
// c's Refusal when it has one, unless err is EINVALID or EUNAVAILABLE (a
// malformed value or a failed store is never hidden behind a refusal).
func (c Change) Refused(err error) error {
	if k := ErrorKind(err); c.Refusal != nil && k != EINVALID && k != EUNAVAILABLE {
		return c.Refusal
	}
	return err
}
