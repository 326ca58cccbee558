package maint

import (
	"context"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// Env is what the file-level jobs (compaction, orphan removal, manifest
// rewriting, lifecycle) share: the catalog, the lake that opens tables as
// iceberg-go tables, and the policy resolver.
type Env struct {
	// Tables loads and commits tables (*catalog.Catalog). Required.
	Tables Tables
	// Lake opens tables for reading and writing files. Required.
	Lake *lake.Lake
	// Policies resolves each table's policy (its Base is the default).
	Policies Resolver
	// Interval is the scheduler's tick, against which job intervals are
	// counted (0: every job runs at every tick).
	Interval time.Duration
	// Retries is how often a commit that lost to a concurrent writer is
	// planned again on the writer's state and retried (default 4).
	Retries int
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (e *Env) log() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e *Env) retries() int {
	if e.Retries <= 0 {
		return 4
	}
	return e.Retries
}

// open loads a table and resolves its policy.
func (e *Env) open(ctx context.Context, wh string, id catalog.Ident) (*table.Table, Policy, error) {
	tbl, err := e.Lake.LoadTable(ctx, wh, id)
	if err != nil {
		return nil, Policy{}, err
	}
	p, err := e.Policies.Policy(ctx, wh, id, tbl.Metadata().Properties())
	if err != nil {
		return nil, Policy{}, err
	}
	return tbl, p, nil
}

// Report is what one maintenance action did (or, in a dry run, would do)
// to one table.
type Report struct {
	// Job is the job's name (compact, expire-snapshots, ...).
	Job string `json:"job"`
	// Changed reports whether the table or its files changed.
	Changed bool `json:"changed"`
	// DryRun reports that nothing was changed on purpose.
	DryRun bool `json:"dry_run"`
	// Summary is a one-line human-readable account.
	Summary string `json:"summary"`
	// Stats are the job's counters (files, bytes, snapshots, ...).
	Stats map[string]int64 `json:"stats"`
	// Files lists paths the job acted on (orphans, cold files), at most
	// maxReportFiles of them.
	Files []string `json:"files,omitempty"`
}

// maxReportFiles bounds Report.Files.
const maxReportFiles = 100

func (r *Report) stat(k string, v int64) {
	if r.Stats == nil {
		r.Stats = map[string]int64{}
	}
	r.Stats[k] += v
}

func (r *Report) file(p string) {
	if len(r.Files) < maxReportFiles {
		r.Files = append(r.Files, p)
	}
}

// result turns a report into the scheduler's Result.
func (r Report) result() Result {
	return Result{Summary: r.Summary, Changed: r.Changed}
}

// gone reports whether err says the table no longer exists.
func gone(err error) bool { return floe.KindOf(err) == floe.NotFound }

// due reports whether a job with the given switch and period is due on
// table t at its tick.
func (e *Env) due(ctx context.Context, t TableRef, on func(Policy) (bool, time.Duration)) (bool, error) {
	st, err := e.Tables.LoadTable(ctx, t.Warehouse, t.Ident)
	if gone(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p, err := e.Policies.Policy(ctx, t.Warehouse, t.Ident, st.Metadata.Properties())
	if err != nil {
		return false, err
	}
	enabled, every := on(p)
	return enabled && due(t.Tick, e.Interval, every, t.String()), nil
}

// Interface guards: the file-level jobs run less often than every tick.
var (
	_ Periodic = (*Compact)(nil)
	_ Periodic = (*Orphans)(nil)
	_ Periodic = (*Manifests)(nil)
	_ Periodic = (*Lifecycle)(nil)
)
