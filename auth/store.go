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
}

// SigningKey is one of Floe's token signing keys.
type SigningKey struct {
	KID        string
	PrivatePEM []byte // PKCS#8 PEM
	CreatedAt  time.Time
}

// Store persists principals and signing keys. Errors are floe.Error values
// (NotFound, AlreadyExists).
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
	// SigningKeys returns all signing keys, newest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// AddSigningKey stores a new signing key.
	AddSigningKey(ctx context.Context, k SigningKey) error
}
