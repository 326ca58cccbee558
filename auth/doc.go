// Package auth authenticates callers: the registry of principals (OAuth2
// clients) with slow-hashed secrets, Floe's signing keys, and the issuing and
// verification of short-lived JWT access tokens. It imports no HTTP code; the
// token endpoint lives in package oauth.
package auth
