package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// newMaintenance builds the maintenance jobs over the catalog and Floe's
// own FileIO, the on-demand maintainer (floe maintain, the management API)
// and the jobs the background scheduler runs (MaintenanceJobs, default all).
func (a *App) newMaintenance(ctx context.Context) (*maint.Maintainer, []maint.Job, error) {
	fsys, err := a.lakeFS(ctx)
	if err != nil {
		return nil, nil, err
	}
	ret := maint.Retention{MaxAge: a.cfg.SnapshotRetention, MinKeep: maint.DefaultMinSnapshotsToKeep}
	env := &maint.Env{
		Tables:   a.cat,
		Lake:     lake.New(a.cat, fsys, lake.Options{Logger: a.log}),
		Policies: maint.Resolver{Namespaces: a.cat, Base: maint.DefaultPolicy(ret)},
		Interval: a.cfg.MaintenanceInterval,
		Logger:   a.log,
	}
	var uploads maint.Uploads
	if a.objects != nil {
		uploads = a.objects
	}
	var cold maint.ColdStore
	if a.objects != nil && a.objects.ColdDir(a.cfg.Warehouse) != "" {
		cold = a.objects
	}
	host, _ := os.Hostname()
	m := &maint.Maintainer{
		Env:       env,
		Compact:   maint.NewCompact(env),
		Expire:    maint.NewExpireSnapshots(a.cat, maint.ExpireOptions{Retention: ret, Namespaces: a.cat, Logger: a.log}),
		Orphans:   maint.NewOrphans(env, uploads),
		Manifests: maint.NewManifests(env),
		Lifecycle: maint.NewLifecycle(env, cold),
		Store:     a.store,
		Node:      host,
		Stats:     maint.NewStatsCache(0),
	}
	all := []maint.Job{m.Expire, m.Compact, m.Manifests, m.Orphans, m.Lifecycle}
	if len(a.cfg.MaintenanceJobs) == 0 {
		return m, all, nil
	}
	var jobs []maint.Job
	for _, name := range a.cfg.MaintenanceJobs {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(j maint.Job) bool { return j.Name() == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("maintenance_jobs: unknown job %q (jobs: expire-snapshots, compact, rewrite-manifests, remove-orphans, lifecycle)", name)
		}
		jobs = append(jobs, all[i])
	}
	return m, jobs, nil
}

// Maintainer runs maintenance on demand and describes tables.
func (a *App) Maintainer() *maint.Maintainer { return a.maintainer }
