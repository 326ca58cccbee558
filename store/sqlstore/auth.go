package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/revoke"
)

const principalColumns = "id, name, client_id, secret_hash, scopes, admin, disabled, created_at, allowed_cidrs"

// principalReadColumns are the columns a principal is read with:
// principalColumns and those that a rotation or revocation sets.
const principalReadColumns = principalColumns + ", old_secret_hash, old_secret_expires_at, tokens_not_before"

// CreatePrincipal adds p: Invalid if its id, name or client id is empty,
// AlreadyExists (entity "principal") if one of them is taken. A zero
// CreatedAt is set to now. Times are kept in UTC with microsecond precision.
func (s *Store) CreatePrincipal(ctx context.Context, p auth.Principal) error {
	switch {
	case p.ID == "":
		return floe.E(floe.Invalid, "principal", "principal id must not be empty")
	case p.Name == "":
		return floe.E(floe.Invalid, "principal", "principal name must not be empty")
	case p.ClientID == "":
		return floe.E(floe.Invalid, "principal", "principal client id must not be empty")
	}
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	js, err := json.Marshal(scopes)
	if err != nil {
		return s.fail("create principal", err)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	return s.write(ctx, "create principal", func(c conn) error {
		n, err := c.exec(ctx, `INSERT INTO principals (`+principalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`,
			p.ID, p.Name, p.ClientID, p.SecretHash, string(js), p.Admin, p.Disabled, s.d.timeArg(p.CreatedAt),
			strings.Join(p.AllowedCIDRs, ","))
		if err != nil || n == 1 {
			return err
		}
		for _, col := range []struct{ column, what, value string }{
			{"name", "Principal already exists: %s", p.Name},
			{"client_id", "Client id is already in use: %s", p.ClientID},
			{"id", "Principal id is already in use: %s", p.ID},
		} {
			taken, err := c.exists(ctx, "SELECT 1 FROM principals WHERE "+col.column+" = ?", col.value)
			if err != nil {
				return err
			}
			if taken {
				return floe.E(floe.AlreadyExists, "principal", col.what, col.value)
			}
		}
		return floe.E(floe.AlreadyExists, "principal", "Principal already exists: %s", p.Name)
	})
}

// PrincipalByClientID returns the principal with that client id, or NotFound
// (entity "principal").
func (s *Store) PrincipalByClientID(ctx context.Context, clientID string) (auth.Principal, error) {
	p, err := s.principal(ctx, "client_id", clientID)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Principal{}, floe.E(floe.NotFound, "principal", "Principal does not exist for client id: %s", clientID)
	}
	if err != nil {
		return auth.Principal{}, s.fail("principal by client id", err)
	}
	return p, nil
}

// PrincipalByName returns the principal with that name, or NotFound (entity
// "principal").
func (s *Store) PrincipalByName(ctx context.Context, name string) (auth.Principal, error) {
	p, err := s.principal(ctx, "name", name)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Principal{}, floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
	}
	if err != nil {
		return auth.Principal{}, s.fail("principal by name", err)
	}
	return p, nil
}

func (s *Store) principal(ctx context.Context, column, value string) (auth.Principal, error) {
	row := s.read().queryRow(ctx, "SELECT "+principalReadColumns+" FROM principals WHERE "+column+" = ?", value)
	return scanPrincipal(row.Scan)
}

func scanPrincipal(scan func(...any) error) (auth.Principal, error) {
	var oldUntil, notBefore dbTime
	var oldHash string
	p, err := scanPrincipalWith(scan, &oldHash, &oldUntil, &notBefore)
	if err != nil {
		return auth.Principal{}, err
	}
	p.OldSecretHash, p.OldSecretExpiresAt, p.TokensNotBefore = oldHash, oldUntil.t, notBefore.t
	return p, nil
}

// scanPrincipalWith scans the principal columns followed by extra columns.
func scanPrincipalWith(scan func(...any) error, extra ...any) (auth.Principal, error) {
	var p auth.Principal
	var scopes, cidrs string
	var at dbTime
	if err := scan(append([]any{&p.ID, &p.Name, &p.ClientID, &p.SecretHash, &scopes, &p.Admin, &p.Disabled, &at, &cidrs}, extra...)...); err != nil {
		return auth.Principal{}, err
	}
	p.AllowedCIDRs = splitCIDRs(cidrs)
	if err := json.Unmarshal([]byte(scopes), &p.Scopes); err != nil {
		return auth.Principal{}, fmt.Errorf("decode scopes of principal %s: %w", p.Name, err)
	}
	if len(p.Scopes) == 0 {
		p.Scopes = nil
	}
	p.CreatedAt = at.t
	return p, nil
}

// ListPrincipals returns all principals ordered by name.
func (s *Store) ListPrincipals(ctx context.Context) ([]auth.Principal, error) {
	rows, err := s.read().query(ctx, "SELECT "+principalReadColumns+" FROM principals ORDER BY name")
	if err != nil {
		return nil, s.fail("list principals", err)
	}
	defer rows.Close()
	out := []auth.Principal{}
	for rows.Next() {
		p, err := scanPrincipal(rows.Scan)
		if err != nil {
			return nil, s.fail("list principals", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list principals", err)
	}
	return out, nil
}

// SetPrincipalDisabled enables or disables a principal by name; NotFound if
// absent. Disabling the only enabled administrator is a Conflict: a
// server must keep one administrator able to manage it.
func (s *Store) SetPrincipalDisabled(ctx context.Context, name string, disabled bool) error {
	return s.write(ctx, "set principal disabled", func(c conn) error {
		if disabled {
			if err := s.keepAnAdmin(ctx, c, name); err != nil {
				return err
			}
		}
		n, err := c.exec(ctx, "UPDATE principals SET disabled = ? WHERE name = ?", disabled, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
		}
		if disabled {
			return s.revokeIn(ctx, c, revoke.Disabled, name, s.now().Add(forever))
		}
		// Enabled again: the revocation stays until every credential and
		// session it refuses would have expired anyway.
		_, err = c.exec(ctx, "UPDATE revocations SET expires_at = ? WHERE kind = ? AND subject = ?",
			s.d.timeArg(s.now().Add(revocationTTL)), string(revoke.Disabled), name)
		return err
	})
}

// RotatePrincipalSecret replaces the secret hash of the principal named
// name with hash, keeping the replaced one until oldUntil when that is
// after now (at most one old hash); NotFound if absent.
func (s *Store) RotatePrincipalSecret(ctx context.Context, name, hash string, oldUntil time.Time) error {
	keep := oldUntil.After(s.now())
	var until any
	if keep {
		until = s.d.timeArg(oldUntil)
	}
	return s.write(ctx, "rotate principal secret", func(c conn) error {
		// The right-hand sides read the row as it was before the update.
		n, err := c.exec(ctx, `UPDATE principals SET old_secret_hash = CASE WHEN ? THEN secret_hash ELSE '' END,
			old_secret_expires_at = ?, secret_hash = ? WHERE name = ?`, keep, until, hash, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
		}
		return nil
	})
}

// RevokePrincipalTokens refuses every access token of the principal named
// name issued before notBefore, and, through a revocation of kind
// revoke.Tokens, the credentials vended and the SQL sessions opened under
// them; NotFound if absent. notBefore never moves back.
func (s *Store) RevokePrincipalTokens(ctx context.Context, name string, notBefore time.Time) error {
	return s.write(ctx, "revoke principal tokens", func(c conn) error {
		nb := s.d.timeArg(notBefore)
		n, err := c.exec(ctx, `UPDATE principals SET tokens_not_before = CASE
			WHEN tokens_not_before IS NULL OR tokens_not_before < ? THEN ? ELSE tokens_not_before END WHERE name = ?`, nb, nb, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
		}
		return s.revokeIn(ctx, c, revoke.Tokens, name, s.now().Add(revocationTTL))
	})
}

// SetPrincipalAllowedCIDRs replaces the network allowlist of the principal
// named name (nil or empty: any address); NotFound if absent. The entries
// are stored as given: callers pass canonical CIDR prefixes.
func (s *Store) SetPrincipalAllowedCIDRs(ctx context.Context, name string, cidrs []string) error {
	return s.write(ctx, "set principal allowed cidrs", func(c conn) error {
		n, err := c.exec(ctx, "UPDATE principals SET allowed_cidrs = ? WHERE name = ?", strings.Join(cidrs, ","), name)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
		}
		return nil
	})
}

// splitCIDRs is the stored allowlist as a slice (nil when empty).
func splitCIDRs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// keepAnAdmin refuses, within a write, a change that takes the principal
// name out of the enabled administrators if it is the last one. The rows of
// the enabled administrators are locked, so two admins disabling each other
// at once cannot both succeed.
func (s *Store) keepAnAdmin(ctx context.Context, c conn, name string) error {
	rows, err := c.query(ctx, "SELECT name FROM principals WHERE admin = ? AND disabled = ?"+s.d.forUpdate, true, false)
	if err != nil {
		return err
	}
	defer rows.Close()
	var admins []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		admins = append(admins, n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(admins) == 1 && admins[0] == name {
		return floe.E(floe.Conflict, "principal",
			"cannot disable %s: it is the only enabled administrator; create or enable another administrator first", name)
	}
	return nil
}

// SigningKeys returns all signing keys, newest first.
func (s *Store) SigningKeys(ctx context.Context) ([]auth.SigningKey, error) {
	rows, err := s.read().query(ctx, "SELECT kid, private_pem, created_at FROM signing_keys ORDER BY created_at DESC, kid DESC")
	if err != nil {
		return nil, s.fail("signing keys", err)
	}
	defer rows.Close()
	out := []auth.SigningKey{}
	for rows.Next() {
		var k auth.SigningKey
		var at dbTime
		if err := rows.Scan(&k.KID, &k.PrivatePEM, &at); err != nil {
			return nil, s.fail("signing keys", err)
		}
		k.CreatedAt = at.t
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("signing keys", err)
	}
	return out, nil
}

// AddSigningKey stores a new signing key: Invalid if its KID or key is empty,
// AlreadyExists (entity "signing key") if the KID is taken. A zero CreatedAt
// is set to now.
func (s *Store) AddSigningKey(ctx context.Context, k auth.SigningKey) error {
	if k.KID == "" {
		return floe.E(floe.Invalid, "signing key", "signing key id must not be empty")
	}
	if len(k.PrivatePEM) == 0 {
		return floe.E(floe.Invalid, "signing key", "signing key %s has no key material", k.KID)
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now()
	}
	return s.write(ctx, "add signing key", func(c conn) error {
		n, err := c.exec(ctx, "INSERT INTO signing_keys (kid, private_pem, created_at) VALUES (?, ?, ?) ON CONFLICT (kid) DO NOTHING",
			k.KID, k.PrivatePEM, s.d.timeArg(k.CreatedAt))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "signing key", "Signing key already exists: %s", k.KID)
		}
		return nil
	})
}
