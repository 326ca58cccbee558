package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/maint"
)

var _ maint.Leases = (*Store)(nil)

// Leases use the store's clock (Options.Now), never the database's: every
// time compared is computed by the node and passed in as a parameter, so that
// the conformance suite can drive expiry with a fake clock and SQLite and
// PostgreSQL behave alike. Nodes sharing a PostgreSQL store therefore need
// clocks synchronised (NTP) to well within a lease's TTL; a node whose clock
// runs ahead sees leases expire early. That costs duplicate work at worst:
// the fencing token still keeps a node whose lease was taken over from
// renewing it or recording its run.
//
// Each operation is a single conditional statement, atomic on both
// databases: on PostgreSQL, INSERT ... ON CONFLICT DO UPDATE locks the
// conflicting row and evaluates its WHERE against the latest committed
// version, so of many concurrent acquirers exactly one sees the lease free.

// releasedExpiry is the expiry a released lease gets: before any clock's now,
// so that the lease is free at once for every node whatever its clock skew.
var releasedExpiry = time.Unix(0, 0).UTC()

func errLeaseLost(name string) error {
	return floe.E(floe.Conflict, "lease", "lease %s was lost", name)
}

// AcquireLease takes the lease name for holder until now+ttl if it is free:
// never taken, released, or expired (expiry <= now). ok is false when another
// holder has it. Every acquisition increments the lease's fencing token.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (maint.Lease, bool, error) {
	if name == "" || holder == "" {
		return maint.Lease{}, false, floe.E(floe.Invalid, "lease", "lease name and holder must not be empty")
	}
	if ttl <= 0 {
		return maint.Lease{}, false, floe.E(floe.Invalid, "lease", "lease TTL must be positive, not %s", ttl)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	l := maint.Lease{Name: name, Holder: holder, Expires: now.Add(ttl)}
	var ok bool
	err := s.write(ctx, "acquire lease", func(c conn) error {
		err := c.queryRow(ctx, `INSERT INTO leases (name, holder, token, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?)
			ON CONFLICT (name) DO UPDATE
			SET holder = excluded.holder, token = leases.token + 1,
				acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
			WHERE leases.expires_at <= excluded.acquired_at
			RETURNING token`,
			name, holder, s.d.timeArg(now), s.d.timeArg(l.Expires)).Scan(&l.Token)
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil || !ok {
		return maint.Lease{}, false, err
	}
	return l, true, nil
}

// RenewLease extends l to now+ttl. It answers Conflict if l was lost: if the
// lease was released or acquired by anyone since l was (an expired lease that
// nobody has taken can still be renewed).
func (s *Store) RenewLease(ctx context.Context, l maint.Lease, ttl time.Duration) error {
	if ttl <= 0 {
		return floe.E(floe.Invalid, "lease", "lease TTL must be positive, not %s", ttl)
	}
	exp := s.now().Add(ttl)
	return s.write(ctx, "renew lease", func(c conn) error {
		n, err := c.exec(ctx, "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND token = ?",
			s.d.timeArg(exp), l.Name, l.Holder, l.Token)
		if err == nil && n == 0 {
			return errLeaseLost(l.Name)
		}
		return err
	})
}

// ReleaseLease frees l at once; the row and its token stay. It answers
// Conflict if l was already lost (released, or acquired by anyone since).
func (s *Store) ReleaseLease(ctx context.Context, l maint.Lease) error {
	return s.write(ctx, "release lease", func(c conn) error {
		return s.release(ctx, c, l)
	})
}

func (s *Store) release(ctx context.Context, c conn, l maint.Lease) error {
	n, err := c.exec(ctx, "UPDATE leases SET holder = '', expires_at = ? WHERE name = ? AND holder = ? AND token = ?",
		s.d.timeArg(releasedExpiry), l.Name, l.Holder, l.Token)
	if err == nil && n == 0 {
		return errLeaseLost(l.Name)
	}
	return err
}

// holds reports, inside a write transaction, whether l is still held: the
// lease row still carries l's holder and token. On PostgreSQL the row stays
// locked until the transaction ends, so no acquisition can slip in between
// the check and the writes it guards.
func (s *Store) holds(ctx context.Context, c conn, l maint.Lease) (bool, error) {
	var holder string
	var token int64
	err := c.queryRow(ctx, "SELECT holder, token FROM leases WHERE name = ?"+s.d.forUpdate, l.Name).Scan(&holder, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return holder == l.Holder && token == l.Token, nil
}
