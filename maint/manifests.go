package maint

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// ManifestsJob is the name of the Manifests job.
const ManifestsJob = "rewrite-manifests"

// Manifests is the manifest rewriting job: when the current snapshot has
// at least floe.maintenance.manifests.min-count data manifests (many small
// commits leave one each), iceberg-go's RewriteManifests merges them into
// manifests of commit.manifest.target-size-bytes (default 8 MiB) and
// commits a "replace" snapshot. No data file is read or written. The
// commit is rebuilt on a concurrent writer's state when one gets in first.
type Manifests struct{ env *Env }

// NewManifests returns the manifest rewriting job.
func NewManifests(env *Env) *Manifests { return &Manifests{env: env} }

// Name returns "rewrite-manifests".
func (j *Manifests) Name() string { return ManifestsJob }

// Due reports whether the job is enabled and due on t at its tick.
func (j *Manifests) Due(ctx context.Context, t TableRef) (bool, error) {
	return j.env.due(ctx, t, func(p Policy) (bool, time.Duration) { return p.ManifestsEnabled, p.ManifestsInterval })
}

// Run rewrites the table's manifests if its policy enables it, it is due
// and it has enough data manifests.
func (j *Manifests) Run(ctx context.Context, t TableRef) (Result, error) {
	tbl, p, err := j.env.open(ctx, t.Warehouse, t.Ident)
	if gone(err) {
		return Result{Summary: "table no longer exists"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("rewrite manifests of %s: %w", t, err)
	}
	if !p.ManifestsEnabled {
		return Result{Summary: PropManifestsEnabled + " is false"}, nil
	}
	if !due(t.Tick, j.env.Interval, p.ManifestsInterval, t.String()) {
		return Result{Summary: "not due"}, nil
	}
	rep, err := j.rewrite(ctx, tbl, p, false)
	if err != nil {
		return Result{}, fmt.Errorf("rewrite manifests of %s: %w", t, err)
	}
	return rep.result(), nil
}

// RewriteManifests rewrites the manifests of table id now if it has at
// least the policy's minimum number of data manifests. With dryRun it only
// counts them.
func (j *Manifests) RewriteManifests(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	tbl, p, err := j.env.open(ctx, wh, id)
	if err != nil {
		return Report{}, err
	}
	if !p.ManifestsEnabled {
		return Report{Job: ManifestsJob, DryRun: dryRun, Summary: PropManifestsEnabled + " is false"}, nil
	}
	return j.rewrite(ctx, tbl, p, dryRun)
}

func (j *Manifests) rewrite(ctx context.Context, tbl *table.Table, p Policy, dryRun bool) (Report, error) {
	rep := Report{Job: ManifestsJob, DryRun: dryRun, Stats: map[string]int64{}}
	for attempt := 1; ; attempt++ {
		snap := tbl.CurrentSnapshot()
		if snap == nil {
			rep.Summary = "the table has no snapshot"
			return rep, nil
		}
		if err := lake.CheckSnapshot(tbl, snap); err != nil {
			return rep, err
		}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return rep, err
		}
		ms, err := snap.Manifests(fsys)
		if err != nil {
			return rep, fmt.Errorf("read manifest list: %w", err)
		}
		data := 0
		for _, m := range ms {
			if m.ManifestContent() == iceberg.ManifestContentData {
				data++
			}
		}
		rep.Stats["data_manifests"] = int64(data)
		if data < p.MinManifests {
			rep.Summary = fmt.Sprintf("%d data manifests, fewer than %d: nothing to do", data, p.MinManifests)
			return rep, nil
		}
		if dryRun {
			rep.Summary = fmt.Sprintf("would merge %d data manifests", data)
			return rep, nil
		}
		// Never rewrite entries that point outside the table's location.
		if err := lake.CheckManifests(ctx, tbl, snap); err != nil {
			return rep, err
		}
		txn := tbl.NewTransaction()
		res, err := txn.RewriteManifests(ctx)
		if err != nil {
			return rep, err
		}
		if res.IsNoOp() {
			rep.Summary = fmt.Sprintf("%d data manifests: %s", data, res.NoOpReason)
			return rep, nil
		}
		_, err = txn.Commit(ctx)
		if err == nil {
			rep.Changed = true
			rep.Stats["rewritten_manifests"] = int64(len(res.RewrittenManifests))
			rep.Stats["added_manifests"] = int64(len(res.AddedManifests))
			rep.Summary = fmt.Sprintf("merged %d manifests into %d", len(res.RewrittenManifests), len(res.AddedManifests))
			return rep, nil
		}
		if !lost(err) || attempt > j.env.retries() {
			return rep, fmt.Errorf("commit: %w", err)
		}
		if err := lake.Pause(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
			return rep, err
		}
		if tbl, err = lake.Reload(ctx, tbl); err != nil {
			return rep, err
		}
	}
}
