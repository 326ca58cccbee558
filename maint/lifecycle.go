package maint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// LifecycleJob is the name of the Lifecycle job.
const LifecycleJob = "lifecycle"

// ColdStore moves objects of the embedded object store to its cold tier
// (*bucket.Store).
type ColdStore interface {
	// MoveToCold moves bucket/key to the cold tier, where reads keep
	// finding it.
	MoveToCold(ctx context.Context, bucket, key string) error
	// IsCold reports whether bucket/key is in the cold tier already.
	IsCold(bucket, key string) (bool, error)
}

// Lifecycle is the tiering job: it moves the table's data and delete files
// that only old snapshots need to the embedded store's cold tier. A file is
// moved when
//
//   - no branch or tag head references it: it is not part of the table as
//     any ref shows it now, only of older snapshots kept for time travel
//     (until snapshot expiry removes them and orphan removal the files);
//   - no snapshot committed within the policy's floe.lifecycle.cold-after
//     references it: such files are rarely read; and
//   - it lies under the table's location on the embedded store.
//
// Moving is transparent to readers (every engine reads through the store,
// which falls back to the cold tier), so the rule errs on the side of
// moving files that a time-travel query may still read, and a file that a
// concurrent commit adds back (a rollback) simply reads from the cold tier.
// The job is off unless the table or one of its namespaces sets
// floe.lifecycle.cold-after. On external S3, Floe moves nothing: S3
// lifecycle rules do the tiering there (docs/maintenance.md).
type Lifecycle struct {
	env *Env
	// Cold is the embedded store; nil (external S3) makes the job a no-op.
	Cold ColdStore
}

// NewLifecycle returns the lifecycle (tiering) job.
func NewLifecycle(env *Env, cold ColdStore) *Lifecycle { return &Lifecycle{env: env, Cold: cold} }

// Name returns "lifecycle".
func (j *Lifecycle) Name() string { return LifecycleJob }

// Due reports whether the job is enabled and due on t at its tick.
func (j *Lifecycle) Due(ctx context.Context, t TableRef) (bool, error) {
	if j.Cold == nil {
		return false, nil
	}
	return j.env.due(ctx, t, func(p Policy) (bool, time.Duration) { return p.ColdAfter > 0, p.LifecycleInterval })
}

// Run tiers the table's files if its policy enables lifecycle and it is due.
func (j *Lifecycle) Run(ctx context.Context, t TableRef) (Result, error) {
	tbl, p, err := j.env.open(ctx, t.Warehouse, t.Ident)
	if gone(err) {
		return Result{Summary: "table no longer exists"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("lifecycle of %s: %w", t, err)
	}
	if off := j.off(p); off != "" {
		return Result{Summary: off}, nil
	}
	if !due(t.Tick, j.env.Interval, p.LifecycleInterval, t.String()) {
		return Result{Summary: "not due"}, nil
	}
	rep, err := j.tier(ctx, tbl, p, false)
	if err != nil {
		return Result{}, fmt.Errorf("lifecycle of %s: %w", t, err)
	}
	return rep.result(), nil
}

// TierTable moves table id's cold files now, whatever the schedule (but
// not if its policy leaves lifecycle off). With dryRun it only lists them.
func (j *Lifecycle) TierTable(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	tbl, p, err := j.env.open(ctx, wh, id)
	if err != nil {
		return Report{}, err
	}
	if off := j.off(p); off != "" {
		return Report{Job: LifecycleJob, DryRun: dryRun, Summary: off, Stats: map[string]int64{}}, nil
	}
	return j.tier(ctx, tbl, p, dryRun)
}

// off says why the job does nothing under policy p ("" if it runs).
func (j *Lifecycle) off(p Policy) string {
	switch {
	case j.Cold == nil:
		return "lifecycle: the warehouse is not on the embedded store (use S3 lifecycle rules)"
	case p.ColdAfter <= 0:
		return "lifecycle is off (" + PropColdAfter + " is not set)"
	}
	return ""
}

// ColdFiles returns the data and delete files of md that lifecycle moves
// at now with cold-after d (see Lifecycle), with their sizes, in the order
// first met (snapshots in metadata order).
func ColdFiles(ctx context.Context, fsys icebergio.IO, md table.Metadata, now time.Time, d time.Duration) ([]iceberg.DataFile, error) {
	cutoff := now.Add(-d).UnixMilli()
	heads := map[int64]bool{}
	for _, ref := range md.Refs() {
		heads[ref.SnapshotID] = true
	}
	if cur := md.CurrentSnapshot(); cur != nil {
		heads[cur.SnapshotID] = true
	}
	cache := map[string][]iceberg.DataFile{} // manifest path -> live files
	files := func(s table.Snapshot) ([]iceberg.DataFile, error) {
		ms, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: manifests: %w", s.SnapshotID, err)
		}
		var out []iceberg.DataFile
		for _, m := range ms {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fs, ok := cache[m.FilePath()]
			if !ok {
				for e, err := range m.Entries(fsys, true) {
					if err != nil {
						return nil, fmt.Errorf("snapshot %d: manifest %s: %w", s.SnapshotID, m.FilePath(), err)
					}
					fs = append(fs, e.DataFile())
				}
				cache[m.FilePath()] = fs
			}
			out = append(out, fs...)
		}
		return out, nil
	}
	hot := map[string]bool{}
	var old []table.Snapshot
	for _, s := range md.Snapshots() {
		if !heads[s.SnapshotID] && s.TimestampMs < cutoff {
			old = append(old, s)
			continue
		}
		fs, err := files(s)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			hot[f.FilePath()] = true
		}
	}
	seen := map[string]bool{}
	var out []iceberg.DataFile
	for _, s := range old {
		fs, err := files(s)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			if p := f.FilePath(); !hot[p] && !seen[p] {
				seen[p] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

func (j *Lifecycle) tier(ctx context.Context, tbl *table.Table, p Policy, dryRun bool) (Report, error) {
	rep := Report{Job: LifecycleJob, DryRun: dryRun, Stats: map[string]int64{}}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return rep, err
	}
	cold, err := ColdFiles(ctx, fsys, tbl.Metadata(), j.env.now(), p.ColdAfter)
	if err != nil {
		return rep, err
	}
	root := strings.TrimSuffix(tbl.Location(), "/") + "/"
	for _, f := range cold {
		loc := f.FilePath()
		b, key, err := objstore.ParseLocation(loc)
		if err != nil || !underLocation(loc, root) {
			rep.stat("skipped_files", 1) // not the table's own file on the embedded store
			continue
		}
		already, err := j.Cold.IsCold(b, key)
		if err != nil {
			rep.stat("skipped_files", 1)
			continue
		}
		if already {
			rep.stat("already_cold_files", 1)
			continue
		}
		if !dryRun {
			err := j.Cold.MoveToCold(ctx, b, key)
			switch {
			case errors.Is(err, bucket.ErrNoSuchKey) || errors.Is(err, bucket.ErrPreconditionFailed):
				rep.stat("skipped_files", 1) // removed or replaced meanwhile
				continue
			case err != nil:
				return rep, fmt.Errorf("move %s to the cold tier: %w", loc, err)
			}
		}
		rep.stat("cold_files", 1)
		rep.stat("cold_bytes", f.FileSizeBytes())
		rep.file(loc)
	}
	verb := "moved"
	if dryRun {
		verb = "would move"
	}
	rep.Changed = !dryRun && rep.Stats["cold_files"] > 0
	rep.Summary = fmt.Sprintf("%s %d files (%d bytes) that only snapshots older than %s reference to the cold tier",
		verb, rep.Stats["cold_files"], rep.Stats["cold_bytes"], p.ColdAfter)
	return rep, nil
}

// underLocation reports whether loc lies under root (ending in "/"),
// treating s3a:// and s3n:// as s3://.
func underLocation(loc, root string) bool {
	norm := func(s string) string {
		for _, p := range []string{"s3a://", "s3n://"} {
			if rest, ok := strings.CutPrefix(s, p); ok {
				return "s3://" + rest
			}
		}
		return s
	}
	return strings.HasPrefix(norm(loc), norm(root))
}
