package upstream

import (
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody/condition"
)

// checkConditions type-checks a policy's conditions against the tool's
// input schema as custody registers it, so that a condition naming a
// field the tool does not have, or using one as the wrong type, fails
// config check and the start alike, naming where it was written.
func checkConditions(p Policy, input json.RawMessage) error {
	if len(p.Conditions) == 0 {
		return nil
	}
	env, err := condition.NewEnv(input)
	if err != nil {
		return err
	}
	for _, c := range p.Conditions {
		if _, err := env.Compile(c.Expr); err != nil {
			return fmt.Errorf("%s: %v", c.Where(), err)
		}
	}
	return nil
}
