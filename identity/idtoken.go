package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"

	"github.com/go-jose/go-jose/v4"

	"github.com/custody-dev/custody"
)

// The reasons an ID token is refused besides those it shares with access
// tokens (ErrAlg, ErrSignature, ErrUnknownIssuer, ErrExpired,
// ErrNotYetValid, ErrNoSubject, ErrUnavailable).
var (
	ErrIDToken         = errors.New("the provider's ID token is not a signed JWT")
	ErrIDTokenAudience = errors.New("the ID token is not meant for custody's client (wrong audience or azp)")
	ErrNonce           = errors.New("the ID token's nonce is not this sign-in's (a replayed or injected answer)")
)

// refuseSignIn returns the custody error of an ID token refused for
// reason: EUNAUTHORIZED, or EUNAVAILABLE when the provider's keys could
// not be fetched; cause, when set, is detail for the log only.
func refuseSignIn(reason, cause error) error {
	err := error(&Refusal{Reason: reason})
	if cause != nil {
		err = errors.Join(err, cause)
	}
	kind := custody.EUNAUTHORIZED
	if errors.Is(reason, ErrUnavailable) {
		kind = custody.EUNAVAILABLE
	}
	return &custody.Error{Kind: kind, Message: "the sign-in is refused: " + reason.Error(), Err: err}
}

// verifyIDToken returns the claims of an ID token (OpenID Connect Core
// 3.1.3.7) once it is signed by the provider with an asymmetric key it
// publishes, names the provider as its issuer and custody's client as
// its audience (and azp, when it has several audiences or an azp), is
// unexpired, names a subject and carries nonce.
func (c *Console) verifyIDToken(ctx context.Context, raw, nonce string) (map[string]any, error) {
	h, unverified, ok := splitJWT(raw)
	if !ok {
		return nil, refuseSignIn(ErrIDToken, nil)
	}
	alg := jose.SignatureAlgorithm(h.Alg)
	if !slices.Contains(signatureAlgs, alg) {
		return nil, refuseSignIn(ErrAlg, nil)
	}
	if claimString(unverified, "iss") != c.cfg.Issuer {
		return nil, refuseSignIn(ErrUnknownIssuer, nil)
	}
	claims, err := c.is.verifySignature(ctx, raw, h.Kid, alg, refuseSignIn)
	if err != nil {
		return nil, err
	}
	if claimString(claims, "iss") != c.cfg.Issuer {
		return nil, refuseSignIn(ErrUnknownIssuer, nil)
	}
	if err := c.vc.checkTimes(claims, refuseSignIn); err != nil {
		return nil, err
	}
	aud, azp := claimStrings(claims, "aud"), claimString(claims, "azp")
	if !slices.Contains(aud, c.cfg.ClientID) || ((len(aud) > 1 || azp != "") && azp != c.cfg.ClientID) {
		return nil, refuseSignIn(ErrIDTokenAudience, nil)
	}
	if got := claimString(claims, "nonce"); nonce == "" || subtle.ConstantTimeCompare([]byte(got), []byte(nonce)) != 1 {
		return nil, refuseSignIn(ErrNonce, nil)
	}
	if claimString(claims, "sub") == "" {
		return nil, refuseSignIn(ErrNoSubject, nil)
	}
	return claims, nil
}
