package identity

// VerifyIDToken is (*Console).verifyIDToken, for tests that verify a real
// ID token the provider issued to another client.
var VerifyIDToken = (*Console).verifyIDToken

// ClaimValues is claimValues, for the roles claim's table test.
var ClaimValues = claimValues
