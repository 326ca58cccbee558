package lake_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// createV3 creates a format-version 3 events table.
func (e *env) createV3(t *testing.T, name string) *table.Table {
	t.Helper()
	sc, spec := eventsSchema()
	if _, err := e.cat.CreateTable(t.Context(), wh, ns, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: spec,
		Properties: map[string]string{"format-version": "3"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if v := tbl.Metadata().Version(); v != 3 {
		t.Fatalf("format version %d, want 3", v)
	}
	return tbl
}

// rowIDRanges returns the [first_row_id, first_row_id+record_count) range
// of every live data file of tbl's current snapshot, as the manifests say
// (explicitly or by inheritance), sorted.
func rowIDRanges(t *testing.T, tbl *table.Table) [][2]int64 {
	t.Helper()
	files, err := lake.CurrentDataFiles(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]int64
	for _, f := range files {
		id := f.FirstRowID()
		if id == nil {
			t.Fatalf("data file %s has no first_row_id", f.FilePath())
		}
		out = append(out, [2]int64{*id, *id + f.Count()})
	}
	slices.SortFunc(out, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	return out
}

// checkLineage checks the v3 row lineage invariants of tbl: every live data
// file has a first_row_id, their ranges do not overlap and lie below the
// table's next-row-id, and every snapshot's first-row-id plus added-rows
// stays within it.
func checkLineage(t *testing.T, tbl *table.Table) {
	t.Helper()
	next := tbl.Metadata().NextRowID()
	ranges := rowIDRanges(t, tbl)
	for i, r := range ranges {
		if r[1] > next {
			t.Errorf("data file rows [%d, %d) reach past next-row-id %d", r[0], r[1], next)
		}
		if i > 0 && r[0] < ranges[i-1][1] {
			t.Errorf("row id ranges overlap: %v and %v", ranges[i-1], r)
		}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.FirstRowID == nil || s.AddedRows == nil {
			t.Errorf("snapshot %d lacks first-row-id/added-rows", s.SnapshotID)
			continue
		}
		if *s.FirstRowID+*s.AddedRows > next {
			t.Errorf("snapshot %d assigns rows past next-row-id %d", s.SnapshotID, next)
		}
	}
}

// TestAppendV3: appends to a v3 table commit (they answered "missing
// first_row_id which is required for v3" before) and assign row lineage:
// the table's next-row-id grows by the rows appended, every data file gets
// a distinct range of row ids.
func TestAppendV3(t *testing.T) {
	e := newEnv(t, false)
	tbl := e.createV3(t, "v3events")
	data := rows(t, tbl, 0, 300)
	defer data.Release()
	got, err := lake.AppendTable(t.Context(), tbl, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	data2 := rows(t, got, 300, 500)
	defer data2.Release()
	if got, err = lake.AppendTable(t.Context(), got, data2, nil); err != nil {
		t.Fatal(err)
	}
	if n := got.Metadata().NextRowID(); n != 500 {
		t.Errorf("next-row-id %d after 500 rows, want 500", n)
	}
	if ids := scanIDs(t, got); !slices.Equal(ids, seq(0, 500)) {
		t.Fatalf("scanned %d ids, want 0..499", len(ids))
	}
	checkLineage(t, got)
	// The files are committed with their statistics (a copy that lost
	// them would stop file pruning) and their partition.
	files0, err := lake.CurrentDataFiles(t.Context(), got)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files0 {
		if len(f.ColumnSizes()) != 3 || len(f.ValueCounts()) != 3 || len(f.LowerBoundValues()) == 0 || len(f.UpperBoundValues()) == 0 || len(f.Partition()) != 1 {
			t.Fatalf("data file %s lost its statistics or partition: sizes %v, bounds %v, partition %v",
				f.FilePath(), f.ColumnSizes(), f.LowerBoundValues(), f.Partition())
		}
	}
	// An overwrite keeps the lineage invariants too.
	over := rows(t, got, 1000, 1100)
	defer over.Release()
	rdr := array.NewTableReader(over, 0)
	defer rdr.Release()
	files, err := lake.WriteDataFiles(t.Context(), got, rdr)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = lake.ReplaceAllFiles(t.Context(), got, files, nil); err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, got); !slices.Equal(ids, seq(1000, 1100)) {
		t.Fatalf("after the overwrite: %d ids, want 1000..1099", len(ids))
	}
	if n := got.Metadata().NextRowID(); n < 600 {
		t.Errorf("next-row-id %d after 600 rows written, want at least 600", n)
	}
	checkLineage(t, got)
}

// TestConcurrentAppendsV3: appends from stale handles retry on top of the
// winner and still never reuse a row id.
func TestConcurrentAppendsV3(t *testing.T) {
	e := newEnv(t, false)
	tbl := e.createV3(t, "busy3")
	const writers, each, per = 2, 3, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				from := int64((w*each + i) * per)
				data := rows(t, tbl, from, from+per)
				_, err := lake.AppendTable(context.Background(), tbl, data, nil) // always the stale handle
				data.Release()
				if err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fresh, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "busy3"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, fresh); len(ids) != writers*each*per {
		t.Fatalf("scanned %d ids, want %d", len(ids), writers*each*per)
	}
	if n := fresh.Metadata().NextRowID(); n != writers*each*per {
		t.Errorf("next-row-id %d, want %d", n, writers*each*per)
	}
	checkLineage(t, fresh)
}

// TestAppendV3RefusesInternalRetries: a v3 table that asks iceberg-go to
// retry commits by itself is refused with Unsupported (a retry inside
// iceberg-go would move the snapshot's first-row-id under the row ids
// assigned to the files), and nothing is committed.
func TestAppendV3RefusesInternalRetries(t *testing.T) {
	e := newEnv(t, false)
	sc, spec := eventsSchema()
	if _, err := e.cat.CreateTable(t.Context(), wh, ns, catalog.CreateTableRequest{Name: "retrying", Schema: sc, Spec: spec,
		Properties: map[string]string{"format-version": "3", table.CommitNumRetriesKey: "3"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "retrying"})
	if err != nil {
		t.Fatal(err)
	}
	data := rows(t, tbl, 0, 10)
	defer data.Release()
	if _, err := lake.AppendTable(t.Context(), tbl, data, nil); floe.KindOf(err) != floe.Unsupported {
		t.Fatalf("append: %v, want Unsupported", err)
	}
	fresh, err := lake.Reload(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.CurrentSnapshot() != nil {
		t.Fatal("a snapshot was committed")
	}
}
