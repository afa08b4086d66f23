package gate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
)

// checkInput is step 2: the exact argument bytes against the tool's input
// contract. A call that does not validate is refused as it is: nothing is
// stripped, coerced or defaulted.
//
// A tool with an arguments policy must match it as well: the policy only
// narrows what the tool's own contract accepts.
func (g *Gateway) checkInput(ctx context.Context, f *flight) error {
	if err := g.checkContract(ctx, f); err != nil {
		return err
	}
	return g.checkArguments(ctx, f)
}

// checkContract checks the arguments against the tool's input contract.
func (g *Gateway) checkContract(_ context.Context, f *flight) error {
	return g.validate(f.tool.Spec.Input, f.Args)
}

// checkArguments checks the arguments against the arguments policy that
// narrows the tool's contract, when it has one.
func (g *Gateway) checkArguments(_ context.Context, f *flight) error {
	return g.validatePolicy(f.tool.Spec.ArgumentsPolicy, f.Args)
}

// checkOutput is step 7: the handler's output against the tool's output
// contract.
func (g *Gateway) checkOutput(_ context.Context, f *flight, out json.RawMessage) error {
	if len(out) == 0 {
		return custody.Errorf(custody.EINVALID, "the tool returned no output")
	}
	if err := g.validate(f.tool.Spec.Output, out); err != nil {
		return err
	}
	return g.validatePolicy(f.tool.Spec.OutputPolicy, out)
}

// validatePolicy validates doc against a policy schema, when there is one.
// Its violations say they are the policy's, so that a caller can tell a
// narrowing from the tool's own contract.
func (g *Gateway) validatePolicy(ref string, doc []byte) error {
	if ref == "" {
		return nil
	}
	err := g.validate(ref, doc)
	ce, ok := err.(*custody.Error)
	if !ok || ce.Kind != custody.EINVALID {
		return err
	}
	c := *ce
	c.Message = "the call is outside the policy's narrowing of the tool: " + ce.Message
	return &c
}

// validate runs the registry. A contract that is missing or broken fails
// closed as an internal error; only a document that does not match is
// EINVALID.
func (g *Gateway) validate(ref string, doc []byte) error {
	err := g.reg.Validate(ref, doc)
	if err == nil {
		return nil
	}
	ce := custody.AsError(err)
	if ce.Kind == custody.EINVALID && len(ce.Violations) > 0 {
		return ce
	}
	return &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("contract %s: %w", ref, err)}
}

// compileCheck makes the registry compile ref now, so that a schema that
// does not compile stops the gateway from starting rather than refusing
// calls later. A compile failure is the one EINVALID without violations.
func (g *Gateway) compileCheck(ref string) error {
	err := g.reg.Validate(ref, []byte("null"))
	if err == nil {
		return nil
	}
	ce := custody.AsError(err)
	if ce.Kind == custody.EINVALID && len(ce.Violations) > 0 {
		return nil
	}
	return err
}
