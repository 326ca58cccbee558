package engine_test

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
)

// checkLineage checks the v3 row lineage invariants of tbl's current
// snapshot: every live data file has a first_row_id, the ranges of row ids
// of the files do not overlap, and they lie below the table's next-row-id.
func checkLineage(t *testing.T, tbl *table.Table) {
	t.Helper()
	files, err := lake.CurrentDataFiles(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	next := tbl.Metadata().NextRowID()
	var ranges [][2]int64
	for _, f := range files {
		id := f.FirstRowID()
		if id == nil {
			t.Fatalf("data file %s has no first_row_id", f.FilePath())
		}
		ranges = append(ranges, [2]int64{*id, *id + f.Count()})
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for i, r := range ranges {
		if r[1] > next {
			t.Errorf("rows [%d, %d) reach past next-row-id %d", r[0], r[1], next)
		}
		if i > 0 && r[0] < ranges[i-1][1] {
			t.Errorf("row id ranges overlap: %v and %v", ranges[i-1], r)
		}
	}
}
