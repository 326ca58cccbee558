package auth

import (
	"context"
	"strings"

	"github.com/floe-lake/floe"
)

// SQLPasswordPrefix starts every stored SQL password verifier: the SCRAM
// verifier format PostgreSQL uses, "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>".
// Floe stores only the verifier, never the password.
const SQLPasswordPrefix = "SCRAM-SHA-256$"

// SetSQLPassword stores the SCRAM-SHA-256 verifier with which the principal
// named name may log in to the SQL endpoint by password; "" removes it (the
// principal then logs in with an access token only).
func (s *Service) SetSQLPassword(ctx context.Context, name, verifier string) error {
	if verifier != "" && (!strings.HasPrefix(verifier, SQLPasswordPrefix) || len(verifier) > 512) {
		return floe.E(floe.Invalid, "password", "a SQL password verifier must be a SCRAM-SHA-256 verifier (%s...)", SQLPasswordPrefix)
	}
	return s.store.SetPrincipalPassword(ctx, name, verifier)
}

// SQLPassword returns the principal named name and its SQL password
// verifier. ok is false when the principal does not exist, is disabled or
// has no password.
func (s *Service) SQLPassword(ctx context.Context, name string) (p Principal, verifier string, ok bool, err error) {
	p, verifier, err = s.store.PrincipalPassword(ctx, name)
	if floe.KindOf(err) == floe.NotFound {
		return Principal{}, "", false, nil
	}
	if err != nil {
		return Principal{}, "", false, err
	}
	if p.Disabled {
		return Principal{}, "", false, nil
	}
	return p, verifier, true, nil
}
