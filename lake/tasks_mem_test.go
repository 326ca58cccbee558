package lake_test

import (
	"runtime"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
)

// TestTasksBytesCoversResidentSize plans a table of many small files
// several times over, measures the heap the plans hold (with the statistics
// maps read, as pruning does) and checks that TasksBytes never undercounts
// it and overcounts it by at most 3x.
func TestTasksBytesCoversResidentSize(t *testing.T) {
	e := newEnv(t, false)
	tbl := e.createTable(t, "plans")
	ctx := t.Context()
	for i := range int64(40) {
		var err error
		if tbl, err = lake.AppendTable(ctx, tbl, rows(t, tbl, i*3, i*3+3), iceberg.Properties{}); err != nil {
			t.Fatal(err)
		}
	}
	const copies = 60
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	plans := make([][]table.FileScanTask, copies)
	for i := range plans {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			_, _ = task.File.LowerBoundValues(), task.File.UpperBoundValues()
			_, _ = task.File.ValueCounts(), task.File.NullValueCounts()
		}
		plans[i] = lake.WholeFiles(tasks)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	measured := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / copies
	est := lake.TasksBytes(plans[0], len(tbl.Schema().Fields()))
	runtime.KeepAlive(plans)
	t.Logf("%d tasks: measured %d B, estimate %d B (%.2fx)", len(plans[0]), measured, est, float64(est)/float64(measured))
	if est < measured || float64(est) > 3*float64(measured) {
		t.Errorf("estimate %d B for %d B measured: want between 1x and 3x", est, measured)
	}
}
