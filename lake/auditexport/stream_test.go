package auditexport_test

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/lake/auditexport"
	bucketpkg "github.com/floe-lake/floe/objstore/bucket"
)

// streamExporter starts a background exporter of e with options o, woken
// by the returned channel, with batches of 10 records; results are sent on
// the returned channel.
func streamExporter(t *testing.T, e *env, o auditexport.Options) (*auditexport.Exporter, chan<- struct{}, <-chan auditexport.Result) {
	t.Helper()
	wake := make(chan struct{})
	done := make(chan auditexport.Result, 16)
	o.BatchSize, o.Wake = 10, wake
	o.Observe = func(r auditexport.Result, err error) {
		if err != nil {
			t.Error(err)
		}
		done <- r
	}
	ex := e.exporter(o)
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	return ex, wake, done
}

// TestStreamOneCommitPerInterval: a background stream woken by the tail
// reads every batch stored until an interval after the last stream ended
// into the same data files: one commit and one file per day's partition,
// not a commit and files per batch (so that the compaction need not encode
// the records again).
func TestStreamOneCommitPerInterval(t *testing.T) {
	e := newEnv(t)
	_, wake, done := streamExporter(t, e, auditexport.Options{Interval: 2 * time.Second})
	start := time.Now()
	for range 4 {
		e.appendEvents(t, 30) // two days: 3 batches each time
		wake <- struct{}{}
		time.Sleep(100 * time.Millisecond)
	}
	r := <-done
	if r.Records != 120 || r.Commits != 1 {
		t.Fatalf("stream: %+v, want 120 records in 1 commit", r)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("the stream ended after %v, before its interval", took)
	}
	rows, tbl := e.exported(t)
	wantSeqs(t, rows, 120)
	if files := dataFiles(t, tbl); len(files) != 2 {
		t.Fatalf("%d data files, want 2 (one per day)", len(files))
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
}

// TestExportFlushesStream: Export does not wait for a stream's interval:
// the stream commits what it read, and Export the rest, each record once.
func TestExportFlushesStream(t *testing.T) {
	e := newEnv(t)
	ex, wake, done := streamExporter(t, e, auditexport.Options{Interval: time.Hour})
	e.appendEvents(t, 25)
	wake <- struct{}{}
	start := time.Now()
	res, err := ex.Export(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("Export waited %v for the stream", took)
	}
	r := <-done
	if r.Records+res.Records != 25 {
		t.Fatalf("stream %+v and export %+v: want 25 records between them", r, res)
	}
	rows, _ := e.exported(t)
	wantSeqs(t, rows, 25)
}

// TestCloseAbandonsStream: Close cancels a stream that is waiting for more
// records: nothing is committed, its files are removed, and the next
// exporter exports every record once.
func TestCloseAbandonsStream(t *testing.T) {
	e := newEnv(t)
	ex, wake, _ := streamExporter(t, e, auditexport.Options{Interval: time.Hour})
	e.appendEvents(t, 35)
	wake <- struct{}{}
	time.Sleep(500 * time.Millisecond) // the stream has written its batches and waits
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	rows, tbl := e.exported(t)
	if len(rows) != 0 || tbl.CurrentSnapshot() != nil {
		t.Fatalf("a closed stream committed %d rows", len(rows))
	}
	if objs := dataObjects(t, e, tbl.Location()); len(objs) != 0 {
		t.Fatalf("a closed stream left files: %v", objs)
	}
	if _, err := e.exporter(auditexport.Options{}).Export(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, _ = e.exported(t)
	wantSeqs(t, rows, 35)
}

// dataObjects lists the objects under the data directory of the table at
// location (s3://bucket/...).
func dataObjects(t *testing.T, e *env, location string) []string {
	t.Helper()
	rest, ok := strings.CutPrefix(location, "s3://")
	if !ok {
		t.Fatalf("location %q", location)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	res, err := e.objs.List(t.Context(), bucket, bucketpkg.ListOptions{Prefix: path.Join(prefix, "data") + "/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range res.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}
