package maint

import (
	"context"
	"fmt"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// RunStore is what on-demand maintenance needs from the store: the
// scheduler's leases and run records, and reading runs back
// (*sqlstore.Store).
type RunStore interface {
	Leases
	BeginMaintenanceRun(ctx context.Context, l Lease, r Run) (Run, bool, error)
	FinishMaintenanceRun(ctx context.Context, l Lease, r Run) error
	MaintenanceRuns(ctx context.Context, f RunFilter) ([]Run, error)
}

// Request selects what Maintainer.Maintain does. When no job is selected,
// all of them run.
type Request struct {
	Compact   bool `json:"compact"`
	Expire    bool `json:"expire"`
	Orphans   bool `json:"orphans"`
	Manifests bool `json:"manifests"`
	// Lifecycle moves files only old snapshots reference to the cold tier
	// (when the table's policy turns lifecycle on).
	Lifecycle bool `json:"lifecycle"`
	// DryRun reports what would be done without changing anything.
	DryRun bool `json:"dry_run"`
}

// Maintainer runs maintenance on one table on demand (floe maintain, the
// management API) and describes tables (floe table show). A run takes the
// same lease as the scheduler's job on that table, so the two never work
// on one table at once, and is recorded in maintenance_runs with a
// negative tick (scheduler ticks are positive).
type Maintainer struct {
	Env       *Env
	Compact   *Compact
	Expire    *ExpireSnapshots
	Orphans   *Orphans
	Manifests *Manifests
	// Lifecycle is the tiering job; nil leaves it out.
	Lifecycle *Lifecycle
	// Store guards and records runs; nil runs them unguarded and unrecorded.
	Store RunStore
	// Node names this node in leases and runs.
	Node string
	// LeaseWait is how long a run waits for a lease another node holds
	// (default 30s) before failing with Conflict.
	LeaseWait time.Duration
	// Stats caches Show's file statistics per snapshot; nil reads the
	// manifests every time.
	Stats *StatsCache
	// Scheduled names the jobs the background scheduler runs (nil: no
	// scheduler runs on this node's configuration); Show then says when
	// each next runs on the table.
	Scheduled []string
	// Now is the clock of Show's next runs (default time.Now).
	Now func() time.Time
}

// onDemandTTL is the lease TTL of an on-demand run; it is renewed every third.
const onDemandTTL = time.Minute

// Maintain runs the selected jobs on table id of warehouse wh, in the
// order compaction, manifest rewriting, snapshot expiry, orphan removal,
// lifecycle tiering, and returns one report per job. It stops at the first error.
func (m *Maintainer) Maintain(ctx context.Context, wh string, id catalog.Ident, req Request) ([]Report, error) {
	if _, err := m.Env.Tables.LoadTable(ctx, wh, id); err != nil {
		return nil, err
	}
	all := !req.Compact && !req.Expire && !req.Orphans && !req.Manifests && !req.Lifecycle
	type step struct {
		on  bool
		job string
		fn  func(context.Context) (Report, error)
	}
	steps := []step{
		{req.Compact || all, CompactJob, func(ctx context.Context) (Report, error) {
			return m.Compact.CompactTable(ctx, wh, id, req.DryRun)
		}},
		{req.Manifests || all, ManifestsJob, func(ctx context.Context) (Report, error) {
			return m.Manifests.RewriteManifests(ctx, wh, id, req.DryRun)
		}},
		{req.Expire || all, ExpireSnapshotsJob, func(ctx context.Context) (Report, error) {
			return m.Expire.ExpireTable(ctx, wh, id, req.DryRun)
		}},
		{req.Orphans || all, OrphansJob, func(ctx context.Context) (Report, error) {
			return m.Orphans.RemoveOrphans(ctx, wh, id, req.DryRun)
		}},
		{(req.Lifecycle || all) && m.Lifecycle != nil, LifecycleJob, func(ctx context.Context) (Report, error) {
			return m.Lifecycle.TierTable(ctx, wh, id, req.DryRun)
		}},
	}
	var out []Report
	for _, s := range steps {
		if !s.on {
			continue
		}
		var rep Report
		var err error
		if req.DryRun || m.Store == nil {
			rep, err = s.fn(ctx)
		} else {
			rep, err = m.guarded(ctx, s.job, wh, id, s.fn)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", s.job, err)
		}
		out = append(out, rep)
	}
	return out, nil
}

// guarded runs fn under the job's lease on the table and records the run.
func (m *Maintainer) guarded(ctx context.Context, job, wh string, id catalog.Ident, fn func(context.Context) (Report, error)) (Report, error) {
	holder := m.Node + "/on-demand"
	name := LeaseName(job, wh, id)
	wait := m.LeaseWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	deadline := time.Now().Add(wait)
	var l Lease
	for {
		var ok bool
		var err error
		l, ok, err = m.Store.AcquireLease(ctx, name, holder, onDemandTTL)
		if err != nil {
			return Report{}, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return Report{}, floe.E(floe.Conflict, "", "maintenance job %s is running on %s; try again later", job, id)
		}
		if err := lake.Pause(ctx, 250*time.Millisecond); err != nil {
			return Report{}, err
		}
	}
	run, ok, err := m.Store.BeginMaintenanceRun(ctx, l, Run{Warehouse: wh, Table: id, Job: job, Tick: -time.Now().UnixNano()})
	if err != nil || !ok {
		_ = m.Store.ReleaseLease(context.WithoutCancel(ctx), l)
		if err == nil {
			err = floe.E(floe.Conflict, "", "maintenance job %s on %s: the run could not be recorded", job, id)
		}
		return Report{}, err
	}
	jctx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for lake.Pause(jctx, onDemandTTL/3) == nil {
			if err := m.Store.RenewLease(jctx, l, onDemandTTL); floe.KindOf(err) == floe.Conflict {
				cancel()
				return
			}
		}
	}()
	rep, jobErr := fn(jctx)
	cancel()
	<-renewed
	run.Outcome, run.Detail = OutcomeOK, rep.Summary
	if jobErr != nil {
		run.Outcome, run.Detail = OutcomeFailed, jobErr.Error()
	}
	run.Detail = truncate("on demand: "+run.Detail, maxDetail)
	bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer bcancel()
	if err := m.Store.FinishMaintenanceRun(bctx, l, run); err != nil && jobErr == nil {
		jobErr = err
	}
	return rep, jobErr
}
