package identity

import (
	"context"
	"errors"
	"slices"

	"github.com/go-jose/go-jose/v4"
)

// verifyJWT checks a JWT access token: its issuer is trusted, its alg is
// one the issuer may use, its signature verifies with one of the
// issuer's published keys, it is unexpired and meant for custody.
func (v *Verifier) verifyJWT(ctx context.Context, token string, h jwtHeader, unverified map[string]any) (Principal, error) {
	is := v.issuers[claimString(unverified, "iss")]
	if is == nil {
		return Principal{}, refuse(ErrUnknownIssuer, nil)
	}
	alg := jose.SignatureAlgorithm(h.Alg)
	if !slices.Contains(is.algs, alg) {
		return Principal{}, refuse(ErrAlg, nil)
	}
	claims, err := is.verifySignature(ctx, token, h.Kid, alg, refuse)
	if err != nil {
		return Principal{}, err
	}
	if err := v.cfg.checkTimes(claims, refuse); err != nil {
		return Principal{}, err
	}
	if !slices.ContainsFunc(claimStrings(claims, "aud"), func(a string) bool { return slices.Contains(is.audiences, a) }) {
		return Principal{}, refuse(ErrAudience, nil)
	}
	return is.principal(claims)
}

// verifySignature returns the claims of token once its signature
// verifies with one of the issuer's keys named kid; a refusal is made by
// refuse.
func (is *issuer) verifySignature(ctx context.Context, token, kid string, alg jose.SignatureAlgorithm, refuse func(reason, cause error) error) (map[string]any, error) {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{alg})
	if err != nil {
		return nil, refuse(ErrSignature, err)
	}
	keys, err := is.key(ctx, kid, alg)
	if err != nil {
		return nil, refuse(ErrUnavailable, err)
	}
	if len(keys) == 0 {
		return nil, refuse(ErrSignature, errors.New("no published key has the token's kid"))
	}
	for _, k := range keys {
		payload, err := jws.Verify(k)
		if err != nil {
			continue
		}
		var claims map[string]any
		if decodeJSON(payload, &claims) != nil {
			return nil, refuse(ErrMalformed, nil)
		}
		return claims, nil
	}
	return nil, refuse(ErrSignature, nil)
}
