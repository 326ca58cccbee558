package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

var _ catalog.PurgeQueue = (*Store)(nil)

const purgeColumns = "warehouse, location, namespace, name, metadata_location, done, attempts, last_error, holder, token, expires_at, created_at, updated_at"

func scanPurge(scan func(...any) error) (catalog.PurgeJob, error) {
	var j catalog.PurgeJob
	var ns string
	var exp, created, updated dbTime
	if err := scan(&j.Warehouse, &j.Location, &ns, &j.Ident.Name, &j.MetadataLocation, &j.Done, &j.Attempts, &j.LastError,
		&j.Holder, &j.Token, &exp, &created, &updated); err != nil {
		return j, err
	}
	j.Ident.Namespace = catalog.ParseNamespaceKey(ns)
	j.Expires, j.CreatedAt, j.UpdatedAt = exp.t, created.t, updated.t
	return j, nil
}

// queuePurge records, inside DeleteEntity's transaction, the purge of the
// table just dropped at loc whose last metadata file is metadata.
func (s *Store) queuePurge(ctx context.Context, c conn, wh string, id catalog.Ident, loc, metadata string) error {
	now := s.d.timeArg(s.now())
	_, err := c.exec(ctx, `INSERT INTO purge_jobs (warehouse, location, namespace, name, metadata_location, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (warehouse, location) DO NOTHING`,
		wh, loc, id.Namespace.Key(), id.Name, metadata, s.d.timeArg(releasedExpiry), now, now)
	return err
}

// purgeRefusal is the error for a claim of loc that overlaps a pending
// purge, or nil when none does.
func (s *Store) purgeRefusal(ctx context.Context, c conn, wh, loc string) error {
	cond, args := overlap("location", loc)
	var at, ns, name string
	err := c.queryRow(ctx, "SELECT location, namespace, name FROM purge_jobs WHERE warehouse = ? AND "+cond+" LIMIT 1",
		append([]any{wh}, args...)...).Scan(&at, &ns, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	id := catalog.Ident{Namespace: catalog.ParseNamespaceKey(ns), Name: name}
	return floe.E(floe.Invalid, "location", "location %s overlaps %s, where the files of dropped table %s are being deleted: retry once the purge is done", loc, at, id)
}

// PurgeJobs lists at most limit (<= 0: all) pending purge jobs of wh (""
// for every warehouse), oldest first.
func (s *Store) PurgeJobs(ctx context.Context, wh string, limit int) ([]catalog.PurgeJob, error) {
	q := "SELECT " + purgeColumns + " FROM purge_jobs"
	var args []any
	if wh != "" {
		q += " WHERE warehouse = ?"
		args = append(args, wh)
	}
	q += " ORDER BY created_at, warehouse, location"
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	out := []catalog.PurgeJob{}
	err := each(ctx, s.read(), q, func(scan func(...any) error) error {
		j, err := scanPurge(scan)
		out = append(out, j)
		return err
	}, args...)
	if err != nil {
		return nil, s.fail("purge jobs", err)
	}
	return out, nil
}

// AcquirePurge takes the job at (wh, loc) for holder until now+ttl if no
// run holds it: ok is false when one does or there is no such job. Every
// acquisition increments the job's fencing token.
func (s *Store) AcquirePurge(ctx context.Context, wh, loc, holder string, ttl time.Duration) (catalog.PurgeJob, bool, error) {
	if holder == "" || ttl <= 0 {
		return catalog.PurgeJob{}, false, floe.E(floe.Invalid, "purge", "a purge run needs a holder and a positive TTL")
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var j catalog.PurgeJob
	ok := false
	err := s.write(ctx, "acquire purge", func(c conn) error {
		var err error
		j, err = scanPurge(c.queryRow(ctx, `UPDATE purge_jobs SET holder = ?, token = token + 1, expires_at = ?, updated_at = ?
			WHERE warehouse = ? AND location = ? AND expires_at <= ? RETURNING `+purgeColumns,
			holder, s.d.timeArg(now.Add(ttl)), s.d.timeArg(now), wh, strings.TrimSuffix(loc, "/"), s.d.timeArg(now)).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil || !ok {
		return catalog.PurgeJob{}, false, err
	}
	return j, true, nil
}

func errPurgeLost(loc string) error {
	return floe.E(floe.Conflict, "purge", "the purge of %s was taken over by another run", loc)
}

// RenewPurge records j.Done and extends j's lease to now+ttl: Conflict if
// the run lost the job.
func (s *Store) RenewPurge(ctx context.Context, j catalog.PurgeJob, ttl time.Duration) error {
	now := s.now()
	return s.write(ctx, "renew purge", func(c conn) error {
		n, err := c.exec(ctx, `UPDATE purge_jobs SET done = ?, expires_at = ?, updated_at = ?
			WHERE warehouse = ? AND location = ? AND holder = ? AND token = ?`,
			j.Done, s.d.timeArg(now.Add(ttl)), s.d.timeArg(now), j.Warehouse, j.Location, j.Holder, j.Token)
		if err == nil && n == 0 {
			return errPurgeLost(j.Location)
		}
		return err
	})
}

// ReleasePurge frees j at once with its progress; a non-empty lastErr
// counts a failed attempt. Conflict if the run lost the job.
func (s *Store) ReleasePurge(ctx context.Context, j catalog.PurgeJob, lastErr string) error {
	failed := 0
	if lastErr != "" {
		failed = 1
		if len(lastErr) > 1000 {
			lastErr = lastErr[:1000]
		}
	}
	return s.write(ctx, "release purge", func(c conn) error {
		n, err := c.exec(ctx, `UPDATE purge_jobs SET done = ?, holder = '', expires_at = ?, updated_at = ?,
			attempts = attempts + ?, last_error = CASE WHEN ? = 1 THEN ? ELSE last_error END
			WHERE warehouse = ? AND location = ? AND holder = ? AND token = ?`,
			j.Done, s.d.timeArg(releasedExpiry), s.d.timeArg(s.now()), failed, failed, lastErr,
			j.Warehouse, j.Location, j.Holder, j.Token)
		if err == nil && n == 0 {
			return errPurgeLost(j.Location)
		}
		return err
	})
}

// FinishPurge removes j and the tombstone at its location in one
// transaction: Conflict if the run lost the job.
func (s *Store) FinishPurge(ctx context.Context, j catalog.PurgeJob) error {
	return s.write(ctx, "finish purge", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM purge_jobs WHERE warehouse = ? AND location = ? AND holder = ? AND token = ?",
			j.Warehouse, j.Location, j.Holder, j.Token)
		if err != nil {
			return err
		}
		if n == 0 {
			return errPurgeLost(j.Location)
		}
		_, err = c.exec(ctx, "DELETE FROM tombstones WHERE warehouse = ? AND location = ?", j.Warehouse, j.Location)
		return err
	})
}

// PurgeBlocker names a live table or view of wh whose files may lie
// under loc: a table at, inside or above it; a table without a recorded
// location (created before migration 005) or a view whose metadata file
// lies under it. "" when there is none.
func (s *Store) PurgeBlocker(ctx context.Context, wh, loc string) (string, error) {
	loc = strings.TrimSuffix(loc, "/")
	cond, oargs := overlap("location", loc)
	args := append([]any{wh}, oargs...)
	args = append(args, loc+"/", loc+"0")
	var ns, name string
	err := s.read().queryRow(ctx, `SELECT namespace, name FROM entities WHERE warehouse = ? AND (
		(kind = 'table' AND location IS NOT NULL AND `+cond+`)
		OR ((kind = 'view' OR location IS NULL) AND metadata_location >= ? AND metadata_location < ?)) LIMIT 1`,
		args...).Scan(&ns, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.fail("purge blocker", err)
	}
	return catalog.Ident{Namespace: catalog.ParseNamespaceKey(ns), Name: name}.String(), nil
}
