package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/floe-lake/floe"
)

// maxSweepInterval bounds the time between two removals of expired
// idempotency rows.
const maxSweepInterval = 5 * time.Minute

// LoadIdempotent returns the response saved under key. ok is false when
// there is none or when it is older than the store's idempotency lifetime.
func (s *Store) LoadIdempotent(ctx context.Context, key string) (status int, header string, body []byte, ok bool, err error) {
	var at dbTime
	err = s.read().queryRow(ctx, "SELECT status, header, body, created_at FROM idempotency WHERE key = ?", key).
		Scan(&status, &header, &body, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil, false, nil
	}
	if err != nil {
		return 0, "", nil, false, s.fail("load idempotent response", err)
	}
	if at.t.Before(s.cutoff()) {
		return 0, "", nil, false, nil
	}
	if body == nil {
		body = []byte{}
	}
	return status, header, body, true, nil
}

// SaveIdempotent saves a response under key unless a live one is saved
// there already: the first writer wins, and an expired response may be
// replaced. Now and then it deletes the expired rows.
func (s *Store) SaveIdempotent(ctx context.Context, key string, status int, header string, body []byte) error {
	if key == "" {
		return floe.E(floe.Invalid, "", "idempotency key must not be empty")
	}
	if body == nil {
		body = []byte{}
	}
	now := s.now()
	cutoff := s.d.timeArg(now.Add(-s.lifetime))
	err := s.write(ctx, "save idempotent response", func(c conn) error {
		_, err := c.exec(ctx, `INSERT INTO idempotency (key, status, header, body, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE
			SET status = excluded.status, header = excluded.header, body = excluded.body, created_at = excluded.created_at
			WHERE idempotency.created_at < ?`,
			key, status, header, body, s.d.timeArg(now), cutoff)
		return err
	})
	if err != nil {
		return err
	}
	s.maybeSweep(ctx, now)
	return nil
}

// cutoff is the creation time before which saved responses are expired.
func (s *Store) cutoff() time.Time {
	return s.now().Add(-s.lifetime).UTC().Truncate(time.Microsecond)
}

// maybeSweep deletes expired idempotency rows if the last sweep is older
// than the lifetime (at most maxSweepInterval). Only one caller sweeps; a
// failure is logged, not returned, since the response was saved.
func (s *Store) maybeSweep(ctx context.Context, now time.Time) {
	interval := min(s.lifetime, maxSweepInterval)
	last := s.lastSweep.Load()
	if now.Sub(time.Unix(0, last)) < interval || !s.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	n, err := s.sweepIdempotency(ctx, now)
	if err != nil {
		s.log.WarnContext(ctx, "sqlstore: removing expired idempotency keys failed", "err", err)
		return
	}
	if n > 0 {
		s.log.DebugContext(ctx, "sqlstore: removed expired idempotency keys", "count", n)
	}
}

// sweepIdempotency deletes the rows that expired before now.
func (s *Store) sweepIdempotency(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "sweep idempotency keys", func(c conn) error {
		var err error
		n, err = c.exec(ctx, "DELETE FROM idempotency WHERE created_at < ?", s.d.timeArg(now.Add(-s.lifetime)))
		return err
	})
	return n, err
}
