package auditexport_test

import (
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/lake/auditexport"
	"github.com/floe-lake/floe/maint"
)

// dataFiles returns the data files of tbl's current snapshot.
func dataFiles(t *testing.T, tbl *table.Table) []table.FileScanTask {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// TestCompactIncremental: the export's compaction rewrites only small files
// of recent partitions, at most Groups groups of at most GroupFiles files
// per run, without losing, duplicating or changing a row; the watermark
// survives it; runs continue until nothing is left to compact.
func TestCompactIncremental(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// 300 events from 23:59:59 over about 37s: two days' partitions, the
	// second holding nearly all of them; 30 commits of 10.
	e.appendEvents(t, 300)
	now := base.Add(time.Hour)
	ex := auditexport.New(e.st, e.cat, e.lk, auditexport.Options{Warehouse: wh, BatchSize: 10, Now: func() time.Time { return now },
		Compact: auditexport.CompactOptions{MinFiles: 4, GroupFiles: 5, Groups: 2}})
	if res, err := ex.Export(ctx); err != nil || res.Commits != 30 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	_, tbl := e.exported(t)
	before := len(dataFiles(t, tbl))
	if before < 30 {
		t.Fatalf("%d data files after 30 commits", before)
	}
	res, err := ex.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Groups != 2 || res.FilesBefore != 10 || res.FilesAfter != 2 {
		t.Fatalf("first compaction: %+v, want 2 groups of 5 files into 2", res)
	}
	rows, tbl := e.exported(t)
	wantSeqs(t, rows, 300)
	if err := audit.New(chain(rows), audit.Options{}).Verify(ctx); err != nil {
		t.Fatalf("the chain after compaction: %v", err)
	}
	if n := len(dataFiles(t, tbl)); n != before-8 {
		t.Fatalf("%d data files after compaction, want %d", n, before-8)
	}
	if tbl.CurrentSnapshot().Summary.Properties["floe.maintenance"] != "audit-compact" {
		t.Errorf("the compaction snapshot: %+v", tbl.CurrentSnapshot().Summary)
	}
	if w, err := auditexport.Watermark(ctx, tbl); err != nil || w != 300 {
		t.Fatalf("watermark after compaction = %d, %v", w, err)
	}
	// Runs go on, each bounded, until fewer than MinFiles small files are
	// left in a partition.
	runs := 1
	for ; runs < 20; runs++ {
		res, err := ex.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Groups > 2 || res.FilesBefore > 10 {
			t.Fatalf("run %d exceeded the bounds: %+v", runs, res)
		}
		if res.Groups == 0 {
			break
		}
	}
	rows, tbl = e.exported(t)
	wantSeqs(t, rows, 300)
	files := dataFiles(t, tbl)
	if len(files) >= 10 || runs < 3 {
		t.Fatalf("%d data files left after %d runs", len(files), runs)
	}
	// Exports continue after compactions, from the right watermark.
	e.appendEvents(t, 5)
	if res, err := ex.Export(ctx); err != nil || res.Records != 5 || res.LastSeq != 305 {
		t.Fatalf("export after compaction: %+v, %v", res, err)
	}
	rows, _ = e.exported(t)
	wantSeqs(t, rows, 305)
}

// TestCompactTiers is the regression test of the export's cost growing
// with its run time: a file that a compaction wrote is not read again by
// the next one, which compacts only the newer files of its own size tier.
// Before tiers every compaction re-read the day's compacted file, so the
// bytes rewritten per exported record grew all day.
func TestCompactTiers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	now := base.Add(time.Hour)
	opts := auditexport.Options{Warehouse: wh, BatchSize: 10, Now: func() time.Time { return now },
		Compact: auditexport.CompactOptions{MinFiles: 4}}
	e.appendEvents(t, 90)
	ex := auditexport.New(e.st, e.cat, e.lk, opts)
	if _, err := ex.Export(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := ex.Compact(ctx)
	if err != nil || first.Groups != 1 || first.FilesAfter != 1 {
		t.Fatalf("first compaction: %+v, %v", first, err)
	}
	// The compacted file is larger than any exported one; the tier bound
	// is set between them.
	var largestSmall, compacted int64
	_, tbl := e.exported(t)
	for _, f := range dataFiles(t, tbl) {
		if f.File.Count() > 10 {
			compacted = f.File.FileSizeBytes()
		} else {
			largestSmall = max(largestSmall, f.File.FileSizeBytes())
		}
	}
	if compacted <= largestSmall {
		t.Fatalf("compacted file %d bytes, largest exported %d: the test needs it larger", compacted, largestSmall)
	}
	e.appendEvents(t, 40)
	if _, err := ex.Export(ctx); err != nil {
		t.Fatal(err)
	}
	opts.Compact.TierBytes = (largestSmall + compacted) / 2
	second, err := auditexport.New(e.st, e.cat, e.lk, opts).Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.Groups != 1 || second.FilesBefore != 4 || second.BytesBefore >= compacted+4*largestSmall-compacted/2 {
		t.Fatalf("second compaction: %+v; want only the 4 new small files of the day, not the %d-byte compacted one", second, compacted)
	}
	rows, _ := e.exported(t)
	wantSeqs(t, rows, 130)
}

// TestCompactGroupBytesAndWindow: a group stops at GroupBytes of input;
// partitions older than the window are never planned.
func TestCompactGroupBytesAndWindow(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.appendEvents(t, 200)
	now := base.Add(time.Hour)
	opts := auditexport.Options{Warehouse: wh, BatchSize: 10, Now: func() time.Time { return now }}
	if _, err := auditexport.New(e.st, e.cat, e.lk, opts).Export(ctx); err != nil {
		t.Fatal(err)
	}
	_, tbl := e.exported(t)
	var largest int64
	for _, f := range dataFiles(t, tbl) {
		largest = max(largest, f.File.FileSizeBytes())
	}
	// Window: ten days on, both days are out of it.
	late := base.Add(10 * 24 * time.Hour)
	lateOpts := opts
	lateOpts.Now = func() time.Time { return late }
	lateOpts.Compact = auditexport.CompactOptions{MinFiles: 2}
	if res, err := auditexport.New(e.st, e.cat, e.lk, lateOpts).Compact(ctx); err != nil || res.Groups != 0 {
		t.Fatalf("compaction of partitions out of the window: %+v, %v", res, err)
	}
	// Group bytes: at most three of the largest file's size per group.
	opts.Compact = auditexport.CompactOptions{MinFiles: 2, GroupBytes: 3 * largest, Groups: 3}
	res, err := auditexport.New(e.st, e.cat, e.lk, opts).Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Groups != 3 || res.FilesBefore > 9 || res.FilesBefore < 6 || res.BytesBefore > 9*largest {
		t.Fatalf("compaction by group bytes (largest file %d): %+v", largest, res)
	}
	rows, _ := e.exported(t)
	wantSeqs(t, rows, 200)
}

// TestTablePropertiesTurnOffGenericCompaction: system.audit is created with
// the generic maintenance compaction off, and an existing table made by an
// older build is upgraded on the next export.
func TestTablePropertiesTurnOffGenericCompaction(t *testing.T) {
	if auditexport.TableProperties()[maint.PropCompactionEnabled] != "false" {
		t.Fatalf("TableProperties: %v", auditexport.TableProperties())
	}
	e := newEnv(t)
	ctx := t.Context()
	e.appendEvents(t, 3)
	ex := auditexport.New(e.st, e.cat, e.lk, auditexport.Options{Warehouse: wh})
	if _, err := ex.Export(ctx); err != nil {
		t.Fatal(err)
	}
	_, tbl := e.exported(t)
	// As an older build left it.
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{maint.PropCompactionEnabled: "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.appendEvents(t, 1)
	if _, err := ex.Export(ctx); err != nil {
		t.Fatal(err)
	}
	rows, tbl := e.exported(t)
	wantSeqs(t, rows, 4)
	if p := tbl.Properties(); p[maint.PropCompactionEnabled] != "false" || p[table.MaxSnapshotAgeMsKey] != "900000" {
		t.Fatalf("properties after upgrade: %v", p)
	}
}

// TestBackgroundCompactsOncePerInterval: background streams that end
// early (here by Flush) do not compact again before an interval has passed
// (each compaction plans the recent files anew); the first stream after
// it does.
func TestBackgroundCompactsOncePerInterval(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	now := base.Add(time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ex, wake, done := streamExporter(t, e, auditexport.Options{Interval: time.Hour, Now: clock,
		Compact: auditexport.CompactOptions{MinFiles: 2}})
	round := func() int {
		t.Helper()
		e.appendEvents(t, 10) // two days' partitions: two files per export
		wake <- struct{}{}    // a stream that would read for an hour
		ex.Flush()
		if r := <-done; r.Records != 10 {
			t.Fatalf("export: %+v", r)
		}
		_, tbl := e.exported(t)
		return len(dataFiles(t, tbl))
	}
	for i, want := range []int{2, 4, 6} {
		if got := round(); got != want {
			t.Fatalf("export %d: %d data files, want %d (no compaction within the interval)", i+1, got, want)
		}
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if got := round(); got != 2 {
		t.Fatalf("after an interval: %d data files, want 2 (each day's 4 files compacted into one)", got)
	}
	rows, _ := e.exported(t)
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 40", len(rows))
	}
}
