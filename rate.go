package custody

import "time"

// RatePer names whose calls a rate limit counts together.
type RatePer string

// RatePer values, as spelled in a tool's policy.
const (
	// PerAgent counts each agent's calls of the tool.
	PerAgent RatePer = "agent"
	// PerTool counts every call of the tool, whoever makes it.
	PerTool RatePer = "tool"
	// PerTrace counts each trace's calls of the tool.
	PerTrace RatePer = "trace"
	// PerGlobal counts the calls of every tool the limit was declared
	// for together: all the tools its policy's glob governs.
	PerGlobal RatePer = "global"
)

// Rate limits a tool to Calls calls that run in each fixed window of
// Every, counted per Per. A call past the limit is denied, saying when
// its window ends.
type Rate struct {
	Per   RatePer       `json:"per"`
	Calls int           `json:"calls"`
	Every time.Duration `json:"every"`
	// Pool names the counter a PerGlobal limit shares: the policy key it
	// was declared under; the tool's name when "".
	Pool string `json:"pool,omitempty"`
}
