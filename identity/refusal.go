package identity

import (
	"errors"

	"github.com/custody-dev/custody"
)

// The reasons a token is refused. Verify returns them wrapped in a
// custody error of kind EUNAUTHORIZED whose message names the reason (and
// never the token); test with errors.Is.
var (
	ErrMalformed     = errors.New("the bearer token is neither a JWT nor a token an introspecting issuer knows")
	ErrUnknownIssuer = errors.New("the token's issuer is not one custody trusts")
	ErrAlg           = errors.New("the token's signing algorithm is not allowed for its issuer")
	ErrSignature     = errors.New("the token's signature does not verify with the issuer's keys")
	ErrExpired       = errors.New("the token has expired")
	ErrNotYetValid   = errors.New("the token is not valid yet")
	ErrAudience      = errors.New("the token is not meant for this resource (wrong audience)")
	ErrInactive      = errors.New("the issuer says the token is not active (revoked, expired or unknown)")
	ErrNoSubject     = errors.New("the token names no agent (its agent claim is missing)")
	ErrUnavailable   = errors.New("the token's issuer could not be reached to check it")
)

// Refusal is a token refused for Reason. Its Error is the reason alone.
type Refusal struct{ Reason error }

// Error implements error.
func (r *Refusal) Error() string { return r.Reason.Error() }

// Unwrap returns the reason.
func (r *Refusal) Unwrap() error { return r.Reason }

// refuse returns the custody error of a token refused for reason; cause,
// when set, is detail for the log only.
func refuse(reason, cause error) error {
	msg := "the bearer token is refused: " + reason.Error()
	err := error(&Refusal{Reason: reason})
	if cause != nil {
		err = errors.Join(err, cause)
	}
	return &custody.Error{Kind: custody.EUNAUTHORIZED, Message: msg, Err: err}
}

// RefusalOf returns the refusal in err's chain, or nil when err is not a
// refused token (no token given, say).
func RefusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
