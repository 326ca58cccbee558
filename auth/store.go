package auth

import (
	"context"
	"time"
)

// Principal is an identity that can obtain tokens: a service, an engine or a user.
type Principal struct {
	ID         string // stable id (uuid)
	Name       string // unique, human-chosen
	ClientID   string // OAuth2 client_id (unique)
	SecretHash string // PHC-style hash of the client secret; never the secret itself
	Scopes     []string
	Admin      bool
	Disabled   bool
	CreatedAt  time.Time
	// AllowedCIDRs is the principal's network allowlist, canonical CIDR
	// prefixes (see package netallow); empty allows any address.
	AllowedCIDRs []string
	// OldSecretHash is the hash of the client secret before the last
	// rotation, accepted until OldSecretExpiresAt ("" for none).
	OldSecretHash      string
	OldSecretExpiresAt time.Time
	// TokensNotBefore refuses every access token issued before it (zero:
	// none); see Service.RevokeTokens.
	TokensNotBefore time.Time
}

// SigningKey is one of Floe's token signing keys.
type SigningKey struct {
	KID string
	// PrivatePEM is the PKCS#8 PEM private key; in the Store, sealed by
	// Options.Sealer (plain PEM only when no Sealer is configured).
	PrivatePEM []byte
	CreatedAt  time.Time
}

// SealPurpose names the signing keys to the Sealer; it is bound into each
// sealed key, with its kid.
const SealPurpose = "auth.signing-key"

// Sealer seals secrets at rest (see internal/keywrap).
type Sealer interface {
	// Seal encrypts secret for (purpose, id).
	Seal(ctx context.Context, purpose, id string, secret []byte) ([]byte, error)
	// Open decrypts a blob sealed for (purpose, id).
	Open(ctx context.Context, purpose, id string, blob []byte) ([]byte, error)
}

// ClientKey is a public key a principal signs JWT assertions with (RFC 7523
// private_key_jwt, and subject tokens of RFC 8693 token exchange).
type ClientKey struct {
	PrincipalID string
	KID         string // RFC 7638 SHA-256 thumbprint, base64url
	Alg         string // pinned signing algorithm: RS256 or ES256
	PublicPEM   string // PKIX "PUBLIC KEY" PEM
	CreatedAt   time.Time
}

// TokenState is what the store knows about an access token's holder when
// a request presents it.
type TokenState struct {
	// Principal is the token's principal, with (at least) its ID, Name,
	// ClientID, Admin, Disabled, AllowedCIDRs and TokensNotBefore set.
	Principal Principal
	// Revoked is set when the token's id was revoked.
	Revoked bool
	// PolicyVersion is the version of the authorization policy (grants,
	// roles, tags) read in the same query, when HasPolicyVersion is set.
	// Verify passes it on in Claims, so that authorizing the request does
	// not cost a second read of it.
	PolicyVersion    int64
	HasPolicyVersion bool
	// RevocationVersion is the revocation version (package revoke) read in
	// the same query, when HasRevocationVersion is set.
	RevocationVersion    int64
	HasRevocationVersion bool
}

// Store persists principals, keys, used assertion ids and revoked tokens.
// Errors are floe.Error values (NotFound, AlreadyExists).
type Store interface {
	// CreatePrincipal adds p; AlreadyExists if its name or client id is taken.
	CreatePrincipal(ctx context.Context, p Principal) error
	// PrincipalByClientID returns the principal with that client id, or NotFound.
	PrincipalByClientID(ctx context.Context, clientID string) (Principal, error)
	// PrincipalByName returns the principal with that name, or NotFound.
	PrincipalByName(ctx context.Context, name string) (Principal, error)
	// ListPrincipals returns all principals ordered by name.
	ListPrincipals(ctx context.Context) ([]Principal, error)
	// SetPrincipalDisabled enables or disables a principal by name; NotFound if absent.
	SetPrincipalDisabled(ctx context.Context, name string, disabled bool) error
	// SetPrincipalAllowedCIDRs replaces a principal's network allowlist
	// (canonical entries; empty: any address); NotFound if absent.
	SetPrincipalAllowedCIDRs(ctx context.Context, name string, cidrs []string) error
	// RotatePrincipalSecret replaces the secret hash of the principal named
	// name with hash. When oldUntil is after now the replaced hash is kept
	// as OldSecretHash until then (replacing any older one), otherwise no
	// old hash is kept. NotFound if absent.
	RotatePrincipalSecret(ctx context.Context, name, hash string, oldUntil time.Time) error
	// RevokePrincipalTokens sets the TokensNotBefore of the principal named
	// name to notBefore (never moving it back) and records a revocation
	// (package revoke, kind Tokens) so that credentials vended and SQL
	// sessions opened under its tokens are refused on every node. NotFound
	// if absent.
	RevokePrincipalTokens(ctx context.Context, name string, notBefore time.Time) error
	// SigningKeys returns all signing keys, newest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// AddSigningKey stores a new signing key.
	AddSigningKey(ctx context.Context, k SigningKey) error
	// DeleteSigningKey removes a signing key; removing an absent one is not an error.
	DeleteSigningKey(ctx context.Context, kid string) error

	// AddClientKey registers a public key for a principal: NotFound if the
	// principal does not exist, AlreadyExists if it has that kid already.
	AddClientKey(ctx context.Context, k ClientKey) error
	// ClientKeys returns a principal's keys, oldest first.
	ClientKeys(ctx context.Context, principalID string) ([]ClientKey, error)
	// DeleteClientKey removes a principal's key; NotFound if absent.
	DeleteClientKey(ctx context.Context, principalID, kid string) error

	// UseJTI records that the assertion id key was used, until expiresAt:
	// AlreadyExists (entity "jti") if it was used before and has not expired.
	UseJTI(ctx context.Context, key string, expiresAt time.Time) error
	// RevokeToken records the access token id jti as revoked until expiresAt
	// (when the token expires anyway). Revoking twice is not an error.
	RevokeToken(ctx context.Context, jti string, expiresAt time.Time) error
	// TokenRevoked reports whether the access token id jti was revoked.
	TokenRevoked(ctx context.Context, jti string) (bool, error)
	// TokenState is PrincipalByClientID and TokenRevoked(jti) in one
	// read, with the authorization policy's version: what Verify needs on
	// every request. NotFound if no principal has the client id.
	TokenState(ctx context.Context, clientID, jti string) (TokenState, error)

	// SetPrincipalPassword stores the SQL password verifier of the
	// principal named name (an empty verifier removes it); NotFound if the
	// principal does not exist.
	SetPrincipalPassword(ctx context.Context, name, verifier string) error
	// PrincipalPassword returns a principal and its SQL password verifier;
	// NotFound if either is missing.
	PrincipalPassword(ctx context.Context, name string) (Principal, string, error)
}
