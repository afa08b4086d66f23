// Package custody holds the vocabulary of the custody gateway: the calls an
// agent makes, the tools it may call, the approvals that hold consequential
// actions, the evidence entries that record all of it, and the store
// contracts that keep them. Every other package speaks in these types.
//
// An agent never touches a tool directly. A Call goes through one chokepoint
// (package gate) that validates the exact argument bytes against a JSON
// Schema contract, checks the envelope policy, holds consequential actions
// for a human approval bound to the exact action, runs the tool, validates
// its output and records everything on a hash-chained ledger.
package custody
