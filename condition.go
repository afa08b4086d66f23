package custody

// When says what a condition decides when it holds.
type When string

// When values, as spelled in a tool's policy.
const (
	// DenyWhen refuses the call when its expression is true.
	DenyWhen When = "denyWhen"
	// ApproveWhen holds the call for a human's approval when its
	// expression is true, even for a tool whose policy needs none.
	ApproveWhen When = "approveWhen"
	// AllowWhen refuses the call unless its expression is true.
	AllowWhen When = "allowWhen"
)

// Condition is a CEL expression of a tool's policy over the call: its
// arguments, agent, tool, trace and the gateway's clock (package
// condition). An expression that cannot be evaluated refuses the call.
type Condition struct {
	When When   `json:"when"`
	Expr string `json:"expr"`
	// Source is where the condition was declared, as a JSON pointer into
	// the configuration ("/tools/fs__write_file/approveWhen"), so that an
	// error names it; "" for one declared in code.
	Source string `json:"-"`
}

// Where returns where c was declared: its Source, else its When.
func (c Condition) Where() string {
	if c.Source != "" {
		return c.Source
	}
	return string(c.When)
}
