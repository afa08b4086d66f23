package systems

import "fmt"

// CheckApprovers refuses a system's tools whose held calls the user of
// an MCP client could decide (custody.ToolSpec.Approvers naming
// custody.ApproverClient): a seed system's approver is an operator. The
// program checks every system's Served before its tools join the
// envelope.
func (s Served) CheckApprovers() error {
	for _, t := range s.Tools {
		if t.Spec.ClientApproves() {
			return fmt.Errorf("tool %q names the MCP client among its approvers: a system's held calls are decided by an operator, never by the client that made them", t.Spec.Name)
		}
	}
	return nil
}
