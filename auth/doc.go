// Package auth authenticates callers: the registry of principals (OAuth2
// clients) with slow-hashed secrets and registered public keys, Floe's
// rotating signing keys, the issuing, verification and revocation of
// short-lived scoped JWT access tokens, and the verification of JWT
// assertions (RFC 7523) signed by clients or by trusted external identity
// providers. It serves no HTTP: the token endpoint lives in package oauth.
// Its only HTTP use is fetching the JWKS of trusted identity providers.
package auth
