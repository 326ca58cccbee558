package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/maint"
)

var _ maint.Store = (*Store)(nil)

// Warehouses lists every warehouse in name order.
func (s *Store) Warehouses(ctx context.Context) ([]catalog.Warehouse, error) {
	rows, err := s.read().query(ctx, "SELECT name, location FROM warehouses ORDER BY name")
	if err != nil {
		return nil, s.fail("list warehouses", err)
	}
	defer rows.Close()
	out := []catalog.Warehouse{}
	for rows.Next() {
		var w catalog.Warehouse
		if err := rows.Scan(&w.Name, &w.Location); err != nil {
			return nil, s.fail("list warehouses", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list warehouses", err)
	}
	return out, nil
}

const finishedRunQuery = `SELECT 1 FROM maintenance_runs
	WHERE warehouse = ? AND namespace = ? AND table_name = ? AND job = ? AND tick = ? AND finished IS NOT NULL`

// MaintenanceRunFinished reports whether job has a finished run (outcome ok
// or failed) on the table for tick.
func (s *Store) MaintenanceRunFinished(ctx context.Context, wh string, table catalog.Ident, job string, tick int64) (bool, error) {
	ok, err := s.read().exists(ctx, finishedRunQuery, wh, table.Namespace.Key(), table.Name, job, tick)
	if err != nil {
		return false, s.fail("maintenance run finished", err)
	}
	return ok, nil
}

// BeginMaintenanceRun records r as running, started now, unless its tick
// already has a finished run (ok is false then). It answers Conflict if l is
// no longer held. The returned run carries its ID, start time and l's token.
func (s *Store) BeginMaintenanceRun(ctx context.Context, l maint.Lease, r maint.Run) (maint.Run, bool, error) {
	if r.Job == "" || r.Warehouse == "" {
		return maint.Run{}, false, floe.E(floe.Invalid, "maintenance run", "a run needs a warehouse and a job")
	}
	r.Started = s.now().UTC().Truncate(time.Microsecond)
	r.Finished = time.Time{}
	r.Outcome = maint.OutcomeRunning
	r.Node, r.Token = l.Holder, l.Token
	var ok bool
	err := s.write(ctx, "begin maintenance run", func(c conn) error {
		ok = false
		held, err := s.holds(ctx, c, l)
		if err != nil {
			return err
		}
		if !held {
			return errLeaseLost(l.Name)
		}
		done, err := c.exists(ctx, finishedRunQuery, r.Warehouse, r.Table.Namespace.Key(), r.Table.Name, r.Job, r.Tick)
		if err != nil || done {
			return err
		}
		err = c.queryRow(ctx, `INSERT INTO maintenance_runs
			(warehouse, namespace, table_name, job, tick, node, token, started, outcome, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.Warehouse, r.Table.Namespace.Key(), r.Table.Name, r.Job, r.Tick, r.Node, r.Token,
			s.d.timeArg(r.Started), string(r.Outcome), r.Detail).Scan(&r.ID)
		ok = err == nil
		return err
	})
	if err != nil || !ok {
		return maint.Run{}, false, err
	}
	return r, true, nil
}

// FinishMaintenanceRun records the outcome and detail of the run r.ID and
// releases l, in one transaction. A finished outcome (ok, failed) is stamped
// with the store's now as its finished time. If l was lost, the run is
// recorded as lost instead, the lease is left to its new holder, and the
// answer is Conflict.
func (s *Store) FinishMaintenanceRun(ctx context.Context, l maint.Lease, r maint.Run) error {
	if r.ID == 0 {
		return floe.E(floe.Invalid, "maintenance run", "run has no id")
	}
	var finished any // NULL unless the outcome counts
	if r.Outcome.Finished() {
		finished = s.d.timeArg(s.now())
	}
	lost := false
	err := s.write(ctx, "finish maintenance run", func(c conn) error {
		held, err := s.holds(ctx, c, l)
		if err != nil {
			return err
		}
		lost = !held
		if lost {
			_, err := c.exec(ctx, "UPDATE maintenance_runs SET outcome = ?, detail = ? WHERE id = ?",
				string(maint.OutcomeLost), r.Detail, r.ID)
			return err
		}
		n, err := c.exec(ctx, "UPDATE maintenance_runs SET outcome = ?, finished = ?, detail = ? WHERE id = ?",
			string(r.Outcome), finished, r.Detail, r.ID)
		if err != nil {
			if uniqueViolation(err) {
				return floe.E(floe.Conflict, "maintenance run", "job %s on %s already has a finished run for tick %d", r.Job, r.Table, r.Tick)
			}
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "maintenance run", "maintenance run %d does not exist", r.ID)
		}
		return s.release(ctx, c, l)
	})
	if err != nil {
		return err
	}
	if lost {
		return errLeaseLost(l.Name)
	}
	return nil
}

// PruneMaintenanceRuns deletes the runs started before t.
func (s *Store) PruneMaintenanceRuns(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "prune maintenance runs", func(c conn) error {
		var err error
		n, err = c.exec(ctx, "DELETE FROM maintenance_runs WHERE started < ?", s.d.timeArg(before))
		return err
	})
	return n, err
}

// MaintenanceRuns returns the runs f selects, newest first.
func (s *Store) MaintenanceRuns(ctx context.Context, f maint.RunFilter) ([]maint.Run, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Warehouse != "" {
		add("warehouse = ?", f.Warehouse)
	}
	if f.Table != nil {
		add("namespace = ?", f.Table.Namespace.Key())
		add("table_name = ?", f.Table.Name)
	}
	if f.Job != "" {
		add("job = ?", f.Job)
	}
	q := "SELECT id, warehouse, namespace, table_name, job, tick, node, token, started, finished, outcome, detail FROM maintenance_runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q += " ORDER BY started DESC, id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.read().query(ctx, q, args...)
	if err != nil {
		return nil, s.fail("list maintenance runs", err)
	}
	defer rows.Close()
	out := []maint.Run{}
	for rows.Next() {
		var r maint.Run
		var ns, outcome string
		var started, finished dbTime
		if err := rows.Scan(&r.ID, &r.Warehouse, &ns, &r.Table.Name, &r.Job, &r.Tick, &r.Node, &r.Token,
			&started, &finished, &outcome, &r.Detail); err != nil {
			return nil, s.fail("list maintenance runs", err)
		}
		r.Table.Namespace = catalog.ParseNamespaceKey(ns)
		r.Started, r.Finished, r.Outcome = started.t, finished.t, maint.Outcome(outcome)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list maintenance runs", err)
	}
	return out, nil
}

// uniqueViolation reports whether err is a unique constraint failure.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	return false
}
