package maint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// CompactJob is the name of the Compact job.
const CompactJob = "compact"

// Compact is the bin-pack compaction job. Per partition (and partition
// spec), it packs data files smaller than 75% of the target size into
// groups of about the target size, reads each group with its delete files
// applied, writes the rows as new files and commits one "replace" snapshot
// that swaps the old files for the new ones. Position and equality delete
// files that no longer apply to any remaining file are removed in the same
// snapshot. Reading and writing stream: memory is bounded by a few Arrow
// batches per group, not by the group's size.
//
// The work is iceberg-go's (table/compaction plans, ExecuteCompactionGroup
// rewrites, RewriteFiles commits). The commit never clobbers a concurrent
// writer: a concurrent append is kept (iceberg-go rebuilds the snapshot on
// top of it), and a concurrent delete that touches a rewritten file fails
// the commit, which is then planned again from the new state.
//
// Files of an older partition spec are rewritten under that spec, so
// partition evolution never moves old data to the new layout.
type Compact struct {
	env *Env
	// GroupOptions tune ExecuteCompactionGroup (tests and benchmarks).
	GroupOptions []table.CompactionGroupOption
}

// NewCompact returns the compaction job.
func NewCompact(env *Env) *Compact {
	return &Compact{env: env, GroupOptions: []table.CompactionGroupOption{
		// Two readers per group: each holds one task's batches at a time.
		table.WithCompactionScanConcurrency(2),
		table.WithCompactionArrowBatchSize(64 << 10),
		table.WithCompactionRecordBatchBufferSize(8),
	}}
}

// Name returns "compact".
func (j *Compact) Name() string { return CompactJob }

// Due reports whether the job is enabled and due on t at its tick.
func (j *Compact) Due(ctx context.Context, t TableRef) (bool, error) {
	return j.env.due(ctx, t, func(p Policy) (bool, time.Duration) { return p.CompactionEnabled, p.CompactionInterval })
}

// Run compacts the table if its policy enables compaction and it is due.
func (j *Compact) Run(ctx context.Context, t TableRef) (Result, error) {
	tbl, p, err := j.env.open(ctx, t.Warehouse, t.Ident)
	if gone(err) {
		return Result{Summary: "table no longer exists"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("compact %s: %w", t, err)
	}
	if !p.CompactionEnabled {
		return Result{Summary: PropCompactionEnabled + " is false"}, nil
	}
	if !due(t.Tick, j.env.Interval, p.CompactionInterval, t.String()) {
		return Result{Summary: "not due"}, nil
	}
	rep, err := j.compact(ctx, tbl, p, false)
	if err != nil {
		return Result{}, fmt.Errorf("compact %s: %w", t, err)
	}
	return rep.result(), nil
}

// CompactTable compacts table id of warehouse wh now, whatever its
// schedule (but not if its policy disables compaction). With dryRun it
// only reports the plan.
func (j *Compact) CompactTable(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	tbl, p, err := j.env.open(ctx, wh, id)
	if err != nil {
		return Report{}, err
	}
	if !p.CompactionEnabled {
		return Report{Job: CompactJob, DryRun: dryRun, Summary: PropCompactionEnabled + " is false"}, nil
	}
	return j.compact(ctx, tbl, p, dryRun)
}

// Config returns the planner configuration for policy p.
func compactionConfig(p Policy) compaction.Config {
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = p.TargetFileSize
	cfg.MinFileSizeBytes = p.TargetFileSize * 3 / 4
	cfg.MaxFileSizeBytes = p.TargetFileSize * 9 / 5
	cfg.MinInputFiles = uint(max(p.MinInputFiles, 1))
	return cfg
}

// compact plans and commits, planning again when a concurrent commit
// conflicts with the rewrite.
func (j *Compact) compact(ctx context.Context, tbl *table.Table, p Policy, dryRun bool) (Report, error) {
	for attempt := 1; ; attempt++ {
		rep, err := j.once(ctx, tbl, p, dryRun)
		if err == nil {
			rep.stat("attempts", int64(attempt))
			return rep, nil
		}
		if !lost(err) || attempt > j.env.retries() {
			return rep, err
		}
		j.env.log().InfoContext(ctx, "compaction lost to a concurrent commit; planning again",
			"table", fmt.Sprint(tbl.Identifier()), "attempt", attempt, "err", err)
		if err := lake.Pause(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
			return rep, err
		}
		fresh, err := lake.Reload(ctx, tbl)
		if err != nil {
			return rep, err
		}
		tbl = fresh
	}
}

// once plans a compaction of tbl's current snapshot, writes the groups and
// commits them as one snapshot.
func (j *Compact) once(ctx context.Context, tbl *table.Table, p Policy, dryRun bool) (Report, error) {
	rep := Report{Job: CompactJob, DryRun: dryRun, Stats: map[string]int64{}}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		rep.Summary = "the table has no snapshot"
		return rep, nil
	}
	if err := lake.CheckSnapshot(tbl, snap); err != nil {
		return rep, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return rep, fmt.Errorf("plan files: %w", err)
	}
	// Never read (and rewrite into this table) a file outside its location.
	if err := lake.CheckTasks(tbl, tasks); err != nil {
		return rep, err
	}
	tasks = lake.WholeFiles(tasks)
	plan, err := compactionConfig(p).PlanCompaction(tasks)
	if err != nil {
		return rep, err
	}
	rep.stat("data_files", int64(plan.TotalInputFiles))
	rep.stat("groups", int64(len(plan.Groups)))
	if len(plan.Groups) == 0 {
		rep.Summary = fmt.Sprintf("nothing to compact: %d data files, none in a partition with %d or more files under %d bytes",
			plan.TotalInputFiles, p.MinInputFiles, p.TargetFileSize*3/4)
		return rep, nil
	}
	var inputs int
	for _, g := range plan.Groups {
		inputs += len(g.Tasks)
		rep.stat("bytes_before", g.TotalSizeBytes)
	}
	rep.stat("rewritten_data_files", int64(inputs))
	if dryRun {
		rep.stat("estimated_output_files", int64(plan.EstOutputFiles))
		rep.Summary = fmt.Sprintf("would rewrite %d of %d data files in %d groups into about %d files of up to %d bytes",
			inputs, plan.TotalInputFiles, len(plan.Groups), plan.EstOutputFiles, p.TargetFileSize)
		return rep, nil
	}

	fsys, err := tbl.FS(ctx)
	if err != nil {
		return rep, err
	}
	var results []table.CompactionGroupResult
	// discard removes the files written so far: they were never committed.
	discard := func(extra ...table.CompactionGroupResult) {
		for _, gr := range append(results, extra...) {
			lake.RemoveFiles(ctx, tbl, gr.NewDataFiles)
		}
	}
	specs := map[int]*table.Table{}
	for _, g := range plan.Groups {
		gt, err := tableWithSpec(tbl, int(g.Tasks[0].File.SpecID()), specs)
		if err != nil {
			discard()
			return rep, err
		}
		gr, err := table.ExecuteCompactionGroup(ctx, gt, table.CompactionTaskGroup{
			PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}, j.GroupOptions...)
		if err != nil {
			discard(gr)
			return rep, fmt.Errorf("rewrite group %q: %w", g.PartitionKey, err)
		}
		results = append(results, gr)
	}
	commitErr := j.commit(ctx, tbl, fsys, snap, results, &rep)
	if commitErr != nil {
		if lost(commitErr) || errors.Is(commitErr, errNotStaged) {
			discard() // nothing was committed
		}
		// Otherwise the outcome is unknown: the files may be referenced,
		// so they are left to orphan removal.
		return rep, commitErr
	}
	rep.Changed = true
	rep.Summary = fmt.Sprintf("rewrote %d data files (%d bytes) into %d (%d bytes) in %d groups; removed %d delete files",
		rep.Stats["rewritten_data_files"], rep.Stats["bytes_before"], rep.Stats["added_data_files"], rep.Stats["bytes_after"],
		len(plan.Groups), rep.Stats["removed_delete_files"])
	return rep, nil
}

// lost reports whether err says that a commit lost to a concurrent one and
// that nothing was committed: planning again on the new state may succeed.
func lost(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged)
}

// errNotStaged marks failures before the catalog commit.
var errNotStaged = errors.New("compaction not staged")

// commit stages the rewrite of results on a transaction of tbl (with the
// delete files the rewrite makes dead) and commits it.
func (j *Compact) commit(ctx context.Context, tbl *table.Table, fsys icebergio.IO, snap *table.Snapshot,
	results []table.CompactionGroupResult, rep *Report) error {
	rewritten := map[string]struct{}{}
	for _, gr := range results {
		for _, df := range gr.OldDataFiles {
			rewritten[df.FilePath()] = struct{}{}
		}
	}
	// A position delete file may reference files outside a group (or not
	// compacted at all): only those whose every target is rewritten go.
	deadPos, err := compaction.CollectDeadPositionDeletes(ctx, fsys, snap, rewritten)
	if err != nil {
		return fmt.Errorf("%w: dead position deletes: %w", errNotStaged, err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fsys, tbl.Metadata(), snap, rewritten)
	if err != nil {
		return fmt.Errorf("%w: dead equality deletes: %w", errNotStaged, err)
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{"floe.maintenance": CompactJob})
	for _, gr := range results {
		gr.SafePosDeletes = nil // replaced by deadPos, checked against every group
		rw.ApplyResult(gr)
		rep.stat("added_data_files", int64(len(gr.NewDataFiles)))
		rep.stat("bytes_after", gr.BytesAfter)
		rep.stat("removed_delete_files", int64(len(gr.SafeDeletionVectors)))
	}
	seen := map[string]bool{}
	for _, df := range append(deadPos, deadEq...) {
		if seen[df.FilePath()] {
			continue
		}
		seen[df.FilePath()] = true
		rw.DeleteFile(df)
		rep.stat("removed_delete_files", 1)
	}
	if err := rw.Commit(ctx); err != nil {
		return fmt.Errorf("%w: stage rewrite: %w", errNotStaged, err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit rewrite: %w", err)
	}
	return nil
}

// tableWithSpec returns tbl as seen by a writer whose default partition
// spec is specID, so that rewritten files keep the spec they had.
func tableWithSpec(tbl *table.Table, specID int, cache map[int]*table.Table) (*table.Table, error) {
	if specID == tbl.Metadata().DefaultPartitionSpec() {
		return tbl, nil
	}
	if t, ok := cache[specID]; ok {
		return t, nil
	}
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetDefaultSpecID(specID); err != nil {
		return nil, fmt.Errorf("partition spec %d: %w", specID, err)
	}
	md, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("partition spec %d: %w", specID, err)
	}
	// Only read and written through, never committed: no catalog.
	t := table.New(tbl.Identifier(), md, tbl.MetadataLocation(), tbl.FS, nil)
	cache[specID] = t
	return t, nil
}
