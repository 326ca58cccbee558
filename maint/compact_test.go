package maint_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// TestCompact: many small appends are compacted per partition; the rows
// are identical (hashed) and the file count drops to one per partition.
func TestCompact(t *testing.T) {
	e := newLakeEnv(t)
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprint("partitioned=", partitioned), func(t *testing.T) {
			id, tbl := e.createTable(t, "cmp", fmt.Sprint("t", partitioned), partitioned, nil)
			for i := range int64(12) {
				tbl = appendRows(t, tbl, i*100, i*100+100)
			}
			before := readContent(t, tbl)
			filesBefore := len(dataFiles(t, tbl))
			wantAfter := 1
			if partitioned {
				wantAfter = 3
			}
			if filesBefore < 12 {
				t.Fatalf("%d files before compaction", filesBefore)
			}
			job := maint.NewCompact(e.env)

			dry, err := job.CompactTable(t.Context(), e.wh, id, true)
			if err != nil {
				t.Fatal(err)
			}
			if dry.Changed || dry.Stats["rewritten_data_files"] != int64(filesBefore) {
				t.Errorf("dry run %+v", dry)
			}
			if got := len(dataFiles(t, e.load(t, id))); got != filesBefore {
				t.Fatalf("the dry run changed the table: %d files", got)
			}

			rep, err := job.CompactTable(t.Context(), e.wh, id, false)
			if err != nil {
				t.Fatal(err)
			}
			after := e.load(t, id)
			if got := len(dataFiles(t, after)); got != wantAfter || !rep.Changed {
				t.Fatalf("after compaction %d files (report %+v), want %d", got, rep, wantAfter)
			}
			if c := readContent(t, after); c.hash != before.hash || !slices.Equal(c.ids, seq(0, 1200)) {
				t.Fatalf("content changed: %d rows", len(c.ids))
			}
			if op := after.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
				t.Errorf("compaction snapshot operation %q, want replace", op)
			}
			// A second run finds nothing left to do.
			rep, err = job.CompactTable(t.Context(), e.wh, id, false)
			if err != nil || rep.Changed {
				t.Fatalf("second compaction: %+v, %v", rep, err)
			}
		})
	}
}

// TestCompactPolicy: min-input-files and compaction.enabled from table or
// namespace properties decide whether a table is compacted.
func TestCompactPolicy(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	job := maint.NewCompact(e.env)
	idFew, tbl := e.createTable(t, "pol", "few", false, map[string]string{maint.PropMinInputFiles: "10"})
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	if rep, err := job.CompactTable(ctx, e.wh, idFew, false); err != nil || rep.Changed {
		t.Fatalf("6 files under min-input-files 10: %+v, %v", rep, err)
	}
	if _, err := e.f.App.Catalog().UpdateNamespaceProperties(ctx, e.wh, idFew.Namespace, nil,
		map[string]string{maint.PropCompactionEnabled: "false"}); err != nil {
		t.Fatal(err)
	}
	idOff, tbl := e.createTable(t, "pol", "off", false, nil)
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	if rep, err := job.CompactTable(ctx, e.wh, idOff, false); err != nil || rep.Changed {
		t.Fatalf("namespace turned compaction off: %+v, %v", rep, err)
	}
	idOn, tbl := e.createTable(t, "pol", "on", false, map[string]string{maint.PropCompactionEnabled: "true"})
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	if rep, err := job.CompactTable(ctx, e.wh, idOn, false); err != nil || !rep.Changed {
		t.Fatalf("table turned compaction back on: %+v, %v", rep, err)
	}
}

// TestCompactAppliesDeletes: position deletes (merge-on-read) and equality
// deletes are applied by the rewrite and the delete files removed.
func TestCompactAppliesDeletes(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "del", "events", false, map[string]string{
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead, "format-version": "2"})
	for i := range int64(8) {
		tbl = appendRows(t, tbl, i*100, i*100+100)
	}
	// Position deletes: ids 0..49.
	txn := tbl.NewTransaction()
	if err := txn.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(50)), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Equality deletes: ids 700..799.
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	for i := int64(700); i < 800; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
	}
	rec := b.NewRecordBatch()
	b.Release()
	txn = tbl.NewTransaction()
	err = txn.CommitEqualityDeletes(ctx, []int{1}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := readContent(t, tbl)
	if want := slices.Concat(seq(50, 700)); !slices.Equal(before.ids, want) {
		t.Fatalf("before compaction: %d rows, want %d", len(before.ids), len(want))
	}
	if n := deleteFileCount(t, tbl); n == 0 {
		t.Fatal("no delete files before compaction")
	}
	rep, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	after := e.load(t, id)
	if c := readContent(t, after); c.hash != before.hash {
		t.Fatalf("content changed: %d rows", len(c.ids))
	}
	if n := deleteFileCount(t, after); n != 0 || rep.Stats["removed_delete_files"] == 0 {
		t.Errorf("%d delete files left after compaction (report %+v)", n, rep)
	}
	if n := len(dataFiles(t, after)); n != 1 {
		t.Errorf("%d data files after compaction, want 1", n)
	}
}

// TestCompactRacingAppends: appends committed while compactions run are
// never lost, over several rounds.
func TestCompactRacingAppends(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "race", "events", true, nil)
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	job := maint.NewCompact(e.env)
	next := int64(60)
	for round := range 4 {
		var wg sync.WaitGroup
		var appendErr, compactErr error
		from := next
		wg.Add(2)
		go func() {
			defer wg.Done()
			w := e.load(t, id)
			for k := range int64(5) {
				data := rows(t, w, from+k*10, from+k*10+10)
				var err error
				w, err = lake.AppendTable(context.WithoutCancel(ctx), w, data, nil)
				data.Release()
				if err != nil {
					appendErr = err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			_, compactErr = job.CompactTable(ctx, e.wh, id, false)
		}()
		wg.Wait()
		if appendErr != nil {
			t.Fatalf("round %d: append: %v", round, appendErr)
		}
		if compactErr != nil && !errors.Is(compactErr, table.ErrCommitFailed) {
			t.Fatalf("round %d: compact: %v", round, compactErr)
		}
		next += 50
		if got := readContent(t, e.load(t, id)).ids; !slices.Equal(got, seq(0, next)) {
			t.Fatalf("round %d: %d rows, want %d", round, len(got), next)
		}
	}
}

// TestCompactKeepsOldSpec: after partition evolution, files written under
// the old spec are compacted under the old spec, new files under the new.
func TestCompactKeepsOldSpec(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "evo", "events", false, nil)
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	txn := tbl.NewTransaction()
	if err := txn.UpdateSpec(true).AddField("at", iceberg.DayTransform{}, "at_day").Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newSpec := int32(tbl.Metadata().DefaultPartitionSpec())
	if newSpec == 0 {
		t.Fatal("spec did not evolve")
	}
	for i := range int64(6) {
		tbl = appendRows(t, tbl, 100+i*10, 100+i*10+10)
	}
	before := readContent(t, tbl)
	if _, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false); err != nil {
		t.Fatal(err)
	}
	after := e.load(t, id)
	specs := map[int32]int{}
	for _, s := range dataFiles(t, after) {
		specs[s]++
	}
	// Old spec: one unpartitioned file; new spec: one file per day.
	if specs[0] != 1 || specs[newSpec] != 3 || len(specs) != 2 {
		t.Errorf("files per spec after compaction: %v", specs)
	}
	if c := readContent(t, after); c.hash != before.hash {
		t.Errorf("content changed")
	}
}

// TestRewriteManifests: 20 small commits leave 20 data manifests; the job
// merges them and the rows are unchanged.
func TestRewriteManifests(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "mf", "events", false, map[string]string{maint.PropMinManifests: "10"})
	for i := range int64(20) {
		tbl = appendRows(t, tbl, i*5, i*5+5)
	}
	before := readContent(t, tbl)
	job := maint.NewManifests(e.env)
	rep, err := job.RewriteManifests(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Changed || rep.Stats["data_manifests"] < 10 || rep.Stats["added_manifests"] >= rep.Stats["rewritten_manifests"] {
		t.Fatalf("report %+v", rep)
	}
	after := e.load(t, id)
	fsys, _ := after.FS(ctx)
	ms, err := after.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 {
		t.Errorf("%d manifests after the rewrite, want 1", len(ms))
	}
	if c := readContent(t, after); c.hash != before.hash {
		t.Fatal("content changed")
	}
	if rep, err := job.RewriteManifests(ctx, e.wh, id, false); err != nil || rep.Changed {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
}
