package sqlstore

import (
	"context"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/vend"
)

var _ revoke.Store = (*Store)(nil)

// revocationTTL is how long a principal's or table's revocation is kept:
// past it, every credential it can refuse has expired (credentials live at
// most vend.MaxTTL), with leeway for clock skew between nodes.
const revocationTTL = vend.MaxTTL + 5*time.Minute

// forever is the expiry of a disabled principal's revocation while it stays
// disabled: its SQL sessions may be older than any credential.
const forever = 100 * 365 * 24 * time.Hour

// revocationUpsert is the ON CONFLICT clause of a revocation row: the newer
// version and the later expiry win.
const revocationUpsert = ` ON CONFLICT (kind, subject) DO UPDATE SET version = excluded.version, exempt = excluded.exempt,
	expires_at = CASE WHEN revocations.expires_at < excluded.expires_at THEN excluded.expires_at ELSE revocations.expires_at END`

// bumpRevocations increments the revocation version in a write
// transaction, which serialises revocations on its row (so that a reader
// that sees version v also sees every row of version <= v), deletes the
// expired rows, and returns the new version.
func (s *Store) bumpRevocations(ctx context.Context, c conn) (int64, error) {
	if _, err := c.exec(ctx, "UPDATE revocation_version SET version = version + 1 WHERE id = 1"); err != nil {
		return 0, err
	}
	var v int64
	if err := c.queryRow(ctx, "SELECT version FROM revocation_version WHERE id = 1").Scan(&v); err != nil {
		return 0, err
	}
	if _, err := c.exec(ctx, "DELETE FROM revocations WHERE expires_at < ?", s.d.timeArg(s.now())); err != nil {
		return 0, err
	}
	return v, nil
}

// revokeIn records, in a write transaction, that subject of kind is revoked
// until expires.
func (s *Store) revokeIn(ctx context.Context, c conn, kind revoke.Kind, subject string, expires time.Time) error {
	return s.revokeExempt(ctx, c, kind, subject, "", expires)
}

// revokeExempt is revokeIn with the id of a principal whose credentials
// the revocation spares (see revoke.Entry.Exempt; "" for none).
func (s *Store) revokeExempt(ctx context.Context, c conn, kind revoke.Kind, subject, exempt string, expires time.Time) error {
	v, err := s.bumpRevocations(ctx, c)
	if err != nil {
		return err
	}
	_, err = c.exec(ctx, "INSERT INTO revocations (kind, subject, version, expires_at, exempt) VALUES (?, ?, ?, ?, ?)"+revocationUpsert,
		string(kind), subject, v, s.d.timeArg(expires), exempt)
	return err
}

// revokeGrantees records, in a write transaction and before the grants
// matching where (a condition on authz_grants' columns with args) are
// deleted, that their grantees lost a grant: the principals they name, and
// the members of the roles they name.
func (s *Store) revokeGrantees(ctx context.Context, c conn, where string, args ...any) error {
	names, err := selectNames(ctx, c, `SELECT grantee FROM authz_grants WHERE grantee_kind = 'principal' AND (`+where+`)
		UNION SELECT m.principal FROM authz_grants JOIN authz_role_members m ON m.role = authz_grants.grantee
		WHERE authz_grants.grantee_kind = 'role' AND (`+where+`)`, append(args, args...)...)
	if err != nil {
		return err
	}
	return s.revokePrincipals(ctx, c, names)
}

// revokeRoleMembers records, in a write transaction, that the members of
// role (or only principal, if not empty) lost the role's grants.
func (s *Store) revokeRoleMembers(ctx context.Context, c conn, role, principal string) error {
	names := []string{principal}
	if principal == "" {
		var err error
		if names, err = selectNames(ctx, c, "SELECT principal FROM authz_role_members WHERE role = ?", role); err != nil {
			return err
		}
	}
	return s.revokePrincipals(ctx, c, names)
}

// revokePrincipals records that the principals named lost a grant.
func (s *Store) revokePrincipals(ctx context.Context, c conn, names []string) error {
	if len(names) == 0 {
		return nil
	}
	v, err := s.bumpRevocations(ctx, c)
	if err != nil {
		return err
	}
	exp := s.d.timeArg(s.now().Add(revocationTTL))
	for _, n := range names {
		if _, err := c.exec(ctx, "INSERT INTO revocations (kind, subject, version, expires_at) VALUES (?, ?, ?, ?)"+revocationUpsert,
			string(revoke.Grant), n, v, exp); err != nil {
			return err
		}
	}
	return nil
}

// selectNames returns the first column of query's rows.
func selectNames(ctx context.Context, c conn, query string, args ...any) ([]string, error) {
	var names []string
	err := each(ctx, c, query, func(scan func(...any) error) error {
		var n string
		if err := scan(&n); err != nil {
			return err
		}
		names = append(names, n)
		return nil
	}, args...)
	return names, err
}

// RevocationVersion returns the revocation version: one primary-key read.
func (s *Store) RevocationVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.read().queryRow(ctx, "SELECT version FROM revocation_version WHERE id = 1").Scan(&v); err != nil {
		return 0, s.fail("revocation version", err)
	}
	return v, nil
}

// Revocations returns the unexpired revocations of a version above after.
func (s *Store) Revocations(ctx context.Context, after int64) ([]revoke.Entry, error) {
	var out []revoke.Entry
	err := each(ctx, s.read(), "SELECT kind, subject, version, expires_at, exempt FROM revocations WHERE version > ? AND expires_at >= ?",
		func(scan func(...any) error) error {
			var e revoke.Entry
			var kind string
			var exp dbTime
			if err := scan(&kind, &e.Subject, &e.Version, &exp, &e.Exempt); err != nil {
				return err
			}
			e.Kind, e.Expires = revoke.Kind(kind), exp.t
			out = append(out, e)
			return nil
		}, after, s.d.timeArg(s.now()))
	if err != nil {
		return nil, s.fail("revocations", err)
	}
	return out, nil
}

// CancelScanPlan records that the scan plan whose id has digest subject is
// cancelled until expires (its plan id's expiry), for every node's
// revocation list (revoke.List.PlanCancelled).
func (s *Store) CancelScanPlan(ctx context.Context, subject string, expires time.Time) error {
	if subject == "" {
		return floe.E(floe.Invalid, "plan", "plan digest must not be empty")
	}
	return s.write(ctx, "cancel scan plan", func(c conn) error {
		return s.revokeIn(ctx, c, revoke.Plan, subject, expires)
	})
}
