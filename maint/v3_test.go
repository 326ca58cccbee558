package maint_test

import (
	"maps"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/maint"
)

// rowIDs reads id -> _row_id of tbl's current rows with iceberg-go, which
// synthesizes _row_id from first_row_id and position where a file does not
// store it.
func rowIDs(t *testing.T, tbl *table.Table) map[int64]int64 {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields("id", iceberg.RowIDColumnName)).ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]int64{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids, rids := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if rids.IsNull(i) {
				t.Fatalf("row %d has no _row_id", ids.Value(i))
			}
			out[ids.Value(i)] = rids.Value(i)
		}
	}
	return out
}

// TestCompactV3: compaction of a v3 table whose rows were appended by Floe
// (row ids from first_row_id) and deleted with deletion vectors applies the
// vectors, removes them, and keeps every surviving row's _row_id.
func TestCompactV3(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "v3", "events", false, map[string]string{
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead, "format-version": "3"})
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*100, i*100+100)
	}
	txn := tbl.NewTransaction()
	if err := txn.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(50)), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := deleteFileCount(t, tbl); n == 0 {
		t.Fatal("no deletion vector before compaction")
	}
	before, beforeIDs := readContent(t, tbl), rowIDs(t, tbl)
	if len(beforeIDs) != 550 {
		t.Fatalf("%d rows before compaction, want 550", len(beforeIDs))
	}
	rep, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	after := e.load(t, id)
	if c := readContent(t, after); c.hash != before.hash || !rep.Changed {
		t.Fatalf("content changed: %d rows (report %+v)", len(c.ids), rep)
	}
	if n := deleteFileCount(t, after); n != 0 {
		t.Errorf("%d deletion vectors left after compaction", n)
	}
	if got := rowIDs(t, after); !maps.Equal(got, beforeIDs) {
		t.Errorf("compaction changed row ids")
	}
}
