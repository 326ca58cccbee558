package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
)

// fakeTasks are n scan tasks over data files with long paths.
func fakeTasks(t *testing.T, n int) []table.FileScanTask {
	t.Helper()
	tasks := make([]table.FileScanTask, n)
	for i := range tasks {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("s3://floe/ns/t/data/%s-%05d.parquet", strings.Repeat("x", 40), i), iceberg.ParquetFile, nil, nil, nil, 1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		tasks[i] = table.FileScanTask{File: b.Build(), Length: 1000}
	}
	return tasks
}

// TestPlanCacheBoundedByBytes caches the plans of many snapshots of a table
// (as SQL queries after every commit do) and checks that the estimated
// memory of the cached plans never exceeds the bound, that the oldest went
// first, and that a plan above a quarter of the bound is not cached.
func TestPlanCacheBoundedByBytes(t *testing.T) {
	const files, columns = 100, 5
	tasks := fakeTasks(t, files)
	one := lake.TasksBytes(tasks, columns)
	p, err := newPlanCache(4096, 10*one+one/2)
	if err != nil {
		t.Fatal(err)
	}
	for snap := range int64(200) {
		p.Add(planKey{table: "t", snapshot: snap}, tasks, nil, columns)
		if got := p.resident(); got > p.maxBytes {
			t.Fatalf("after %d plans: %d bytes cached > bound %d", snap+1, got, p.maxBytes)
		}
	}
	if got := p.c.Len(); got != 10 {
		t.Errorf("%d plans cached, want 10", got)
	}
	if _, ok := p.Get(planKey{table: "t", snapshot: 0}); ok {
		t.Error("the oldest plan is still cached")
	}
	if got, ok := p.Get(planKey{table: "t", snapshot: 199}); !ok || len(got) != files {
		t.Errorf("the newest plan: cached %v with %d tasks", ok, len(got))
	}
	p.Add(planKey{table: "huge"}, fakeTasks(t, 4*files), nil, columns)
	if _, ok := p.Get(planKey{table: "huge"}); ok {
		t.Error("a plan above a quarter of the bound was cached")
	}
	p.c.Purge()
	if got := p.resident(); got != 0 {
		t.Errorf("%d bytes accounted after purge, want 0", got)
	}
}
