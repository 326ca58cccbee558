package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/revoke"
)

// DeleteSigningKey removes a signing key; removing an absent one is not an
// error.
func (s *Store) DeleteSigningKey(ctx context.Context, kid string) error {
	return s.write(ctx, "delete signing key", func(c conn) error {
		_, err := c.exec(ctx, "DELETE FROM signing_keys WHERE kid = ?", kid)
		return err
	})
}

// AddClientKey registers a public key for a principal: Invalid if a field is
// empty, NotFound (entity "principal") if the principal does not exist,
// AlreadyExists (entity "client key") if it has that kid already. A zero
// CreatedAt is set to now.
func (s *Store) AddClientKey(ctx context.Context, k auth.ClientKey) error {
	if k.PrincipalID == "" || k.KID == "" || k.Alg == "" || k.PublicPEM == "" {
		return floe.E(floe.Invalid, "client key", "client key needs a principal, a kid, an alg and a public key")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now()
	}
	return s.write(ctx, "add client key", func(c conn) error {
		ok, err := c.exists(ctx, "SELECT 1 FROM principals WHERE id = ?"+s.d.forShare, k.PrincipalID)
		if err != nil {
			return err
		}
		if !ok {
			return floe.E(floe.NotFound, "principal", "Principal id does not exist: %s", k.PrincipalID)
		}
		n, err := c.exec(ctx, `INSERT INTO client_keys (principal_id, kid, alg, public_pem, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (principal_id, kid) DO NOTHING`, k.PrincipalID, k.KID, k.Alg, k.PublicPEM, s.d.timeArg(k.CreatedAt))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "client key", "Client key already registered: %s", k.KID)
		}
		return nil
	})
}

// ClientKeys returns a principal's keys, oldest first (none for an unknown
// principal).
func (s *Store) ClientKeys(ctx context.Context, principalID string) ([]auth.ClientKey, error) {
	rows, err := s.read().query(ctx, `SELECT principal_id, kid, alg, public_pem, created_at FROM client_keys
		WHERE principal_id = ? ORDER BY created_at, kid`, principalID)
	if err != nil {
		return nil, s.fail("client keys", err)
	}
	defer rows.Close()
	out := []auth.ClientKey{}
	for rows.Next() {
		var k auth.ClientKey
		var at dbTime
		if err := rows.Scan(&k.PrincipalID, &k.KID, &k.Alg, &k.PublicPEM, &at); err != nil {
			return nil, s.fail("client keys", err)
		}
		k.CreatedAt = at.t
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("client keys", err)
	}
	return out, nil
}

// DeleteClientKey removes a principal's key; NotFound (entity "client key")
// if absent.
func (s *Store) DeleteClientKey(ctx context.Context, principalID, kid string) error {
	return s.write(ctx, "delete client key", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM client_keys WHERE principal_id = ? AND kid = ?", principalID, kid)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "client key", "Client key does not exist: %s", kid)
		}
		return nil
	})
}

// UseJTI records that the assertion id key was used, until expiresAt:
// AlreadyExists (entity "jti") if it was used before and has not expired.
// An expired use is replaced. Now and then it deletes expired rows.
func (s *Store) UseJTI(ctx context.Context, key string, expiresAt time.Time) error {
	if key == "" {
		return floe.E(floe.Invalid, "jti", "assertion id must not be empty")
	}
	now := s.now()
	err := s.write(ctx, "use jti", func(c conn) error {
		n, err := c.exec(ctx, `INSERT INTO used_jtis (key, expires_at) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE used_jtis.expires_at < ?`,
			key, s.d.timeArg(expiresAt), s.d.timeArg(now))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "jti", "assertion id was already used")
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.maybeSweepTable(ctx, &s.lastJTISweep, "used_jtis", now)
	return nil
}

// RevokeToken records the access token id jti as revoked until expiresAt.
// Revoking twice keeps the later expiry. Now and then it deletes expired rows.
func (s *Store) RevokeToken(ctx context.Context, jti string, expiresAt time.Time) error {
	if jti == "" {
		return floe.E(floe.Invalid, "token", "token id must not be empty")
	}
	now := s.now()
	err := s.write(ctx, "revoke token", func(c conn) error {
		_, err := c.exec(ctx, `INSERT INTO revoked_tokens (jti, expires_at) VALUES (?, ?)
			ON CONFLICT (jti) DO UPDATE SET expires_at = excluded.expires_at WHERE revoked_tokens.expires_at < excluded.expires_at`,
			jti, s.d.timeArg(expiresAt))
		if err != nil {
			return err
		}
		// Credentials vended under the token may outlive it by up to
		// vend.MaxTTL: its revocation is kept as long.
		return s.revokeIn(ctx, c, revoke.Token, jti, expiresAt.Add(revocationTTL))
	})
	if err != nil {
		return err
	}
	s.maybeSweepTable(ctx, &s.lastRevokedSweep, "revoked_tokens", now)
	return nil
}

// TokenRevoked reports whether the access token id jti was revoked. Rows are
// kept until the token expires, so an expired row still answers true; the
// token's own expiry refuses it anyway.
func (s *Store) TokenRevoked(ctx context.Context, jti string) (bool, error) {
	ok, err := s.read().exists(ctx, "SELECT 1 FROM revoked_tokens WHERE jti = ?", jti)
	if err != nil {
		return false, s.fail("token revoked", err)
	}
	return ok, nil
}

// maybeSweepTable deletes the rows of table (used_jtis or revoked_tokens)
// that expired before now, at most once per maxSweepInterval per store.
// Failures are logged: the caller's write succeeded.
func (s *Store) maybeSweepTable(ctx context.Context, last *atomic.Int64, table string, now time.Time) {
	l := last.Load()
	if now.Sub(time.Unix(0, l)) < maxSweepInterval || !last.CompareAndSwap(l, now.UnixNano()) {
		return
	}
	err := s.write(ctx, "sweep "+table, func(c conn) error {
		_, err := c.exec(ctx, "DELETE FROM "+table+" WHERE expires_at < ?", s.d.timeArg(now))
		return err
	})
	if err != nil {
		s.log.WarnContext(ctx, "sqlstore: removing expired rows failed", "table", table, "err", err)
	}
}

// TokenState returns the principal with that client id (NotFound, entity
// "principal", if none), whether the access token id jti was revoked and
// the authorization policy's version, in one point query: Verify runs it
// on every authenticated request. It reads only the principal's columns
// Verify needs (see auth.TokenState).
func (s *Store) TokenState(ctx context.Context, clientID, jti string) (auth.TokenState, error) {
	var ts auth.TokenState
	p := &ts.Principal
	var cidrs string
	var notBefore dbTime
	err := s.read().queryRow(ctx, "SELECT id, name, client_id, admin, disabled, allowed_cidrs, tokens_not_before"+
		", EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = ?), (SELECT version FROM authz_version WHERE id = 1)"+
		", (SELECT version FROM revocation_version WHERE id = 1)"+
		" FROM principals WHERE client_id = ?", jti, clientID).
		Scan(&p.ID, &p.Name, &p.ClientID, &p.Admin, &p.Disabled, &cidrs, &notBefore, &ts.Revoked, &ts.PolicyVersion, &ts.RevocationVersion)
	p.AllowedCIDRs, p.TokensNotBefore = splitCIDRs(cidrs), notBefore.t
	if errors.Is(err, sql.ErrNoRows) {
		return auth.TokenState{}, floe.E(floe.NotFound, "principal", "Principal does not exist for client id: %s", clientID)
	}
	if err != nil {
		return auth.TokenState{}, s.fail("token state", err)
	}
	ts.HasPolicyVersion, ts.HasRevocationVersion = true, true
	return ts, nil
}
