package auditexport_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/auditexport"
)

// synthetic is an audit source of n records of about 550 bytes each (as a
// loadTable record is), made on demand so that the test holds none of them.
type synthetic struct {
	n    int64
	read atomic.Int64 // records handed out
}

func (s *synthetic) AuditRecords(_ context.Context, after int64, limit int) ([]audit.Record, error) {
	var out []audit.Record
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for seq := after + 1; seq <= s.n && len(out) < limit; seq++ {
		out = append(out, audit.Record{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond),
			RequestID: fmt.Sprintf("%016x", seq), Principal: "etl-service", ClientAddr: "10.0.12.34:51234",
			Action: "catalog.loadTable", Resource: fmt.Sprintf("table:floe/crm.accounts_%d", seq%50), Outcome: audit.OutcomeSuccess,
			Detail: []byte(fmt.Sprintf(`{"access":"read","credentials":"vended","metadata_location":"s3://floe/crm/accounts_%d/metadata/%05d-%s.metadata.json","snapshot_id":%d,"user_agent":"PyIceberg/0.12.0"}`,
				seq%50, seq%100000, strings.Repeat("ab12", 9), seq*7919)),
			PrevHash: fmt.Sprintf("%064x", seq-1), Hash: fmt.Sprintf("%064x", seq)})
	}
	s.read.Add(int64(len(out)))
	return out, nil
}

// peakHeap samples the live heap (as of the last garbage collection,
// runtime/metrics /gc/heap/live:bytes) every few milliseconds until stop
// is called, and returns its peak above its level at the start. The live
// heap, unlike the allocated heap, does not count garbage awaiting
// collection, so it measures what the export holds, whatever GOGC is.
func peakHeap() (stop func() uint64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// smallCacheNode is a node whose catalog caches little parsed metadata:
// the cache keeps versions of every table (bounded on its own, see
// catalog.Options); a small one here measures the export.
func smallCacheNode(t *testing.T) (*catalog.Catalog, *lake.Lake) {
	e := newEnv(t)
	cat := catalog.New(e.st, e.objs.FileIO(), catalog.Options{MetadataCacheEntries: 4})
	return cat, lake.New(cat, lake.NewBucketFS(e.objs), lake.Options{})
}

// TestExportMemoryBounded exports 200,000 records of about 550 bytes
// (110 MB of records) with the default options and checks that the live
// heap never grows by more than 96 MiB over its level before the export:
// a commit holds one bounded batch (DefaultBatchSize records and
// DefaultBatchBytes of them), never the backlog.
func TestExportMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("exports 200,000 records")
	}
	const n, bound = 200_000, 96 << 20
	cat, lk := smallCacheNode(t)
	src := &synthetic{n: n}
	ex := auditexport.New(src, cat, lk, auditexport.Options{Warehouse: wh,
		Now:     func() time.Time { return time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC) },
		Compact: auditexport.CompactOptions{MinFiles: 4}})
	stop := peakHeap()
	res, err := ex.Export(t.Context())
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != n || res.LastSeq != n {
		t.Fatalf("export: %+v", res)
	}
	t.Logf("exported %d records in %d commits; peak heap growth %.1f MiB (bound %d MiB)", res.Records, res.Commits,
		float64(peak)/(1<<20), bound>>20)
	if peak > bound {
		t.Fatalf("peak heap grew by %.1f MiB during the export, bound %d MiB", float64(peak)/(1<<20), bound>>20)
	}
	// The compaction of the files (200,000 rows, one day) streams too.
	stop = peakHeap()
	cr, err := ex.Compact(t.Context())
	peak = stop()
	if err != nil {
		t.Fatal(err)
	}
	if cr.Groups != 1 || cr.FilesBefore != res.Commits || cr.FilesAfter != 1 {
		t.Fatalf("compaction: %+v", cr)
	}
	t.Logf("compacted %d files (%.1f MiB) into %d (%.1f MiB); peak heap growth %.1f MiB (bound %d MiB)", cr.FilesBefore,
		float64(cr.BytesBefore)/(1<<20), cr.FilesAfter, float64(cr.BytesAfter)/(1<<20), float64(peak)/(1<<20), bound>>20)
	if peak > bound {
		t.Fatalf("peak heap grew by %.1f MiB during the compaction, bound %d MiB", float64(peak)/(1<<20), bound>>20)
	}
}

// TestExportBatchBytes: a commit stops at BatchBytes of records (by
// RecordSize), and a record larger than BatchBytes still goes, alone.
func TestExportBatchBytes(t *testing.T) {
	e := newEnv(t)
	src := &synthetic{n: 95}
	rs, err := src.AuditRecords(t.Context(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	size := auditexport.RecordSize(rs[0])
	// Records differ in size by a few bytes: 10.5 records' worth holds 10.
	ex := auditexport.New(src, e.cat, e.lk, auditexport.Options{Warehouse: wh, BatchBytes: size*21/2 + 2})
	res, err := ex.Export(t.Context())
	if err != nil || res.Records != 95 || res.Commits != 10 {
		t.Fatalf("export by bytes: %+v, %v (want 95 records in 10 commits)", res, err)
	}
	src2 := &synthetic{n: 98}
	ex = auditexport.New(src2, e.cat, e.lk, auditexport.Options{Warehouse: wh, BatchBytes: 1})
	if res, err = ex.Export(t.Context()); err != nil || res.Records != 3 || res.Commits != 3 {
		t.Fatalf("export of records larger than BatchBytes: %+v, %v (want 3 records in 3 commits)", res, err)
	}
}

// TestStreamMemoryBounded: a background stream of 300,000 records of about
// 550 bytes (165 MB of records) into one open file, in one commit, keeps
// the live heap within 96 MiB of its level before: it holds one batch and
// one row group (at most 100,000 rows and 16 MiB) at a time, never the
// file.
func TestStreamMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 300,000 records")
	}
	const n, bound = 300_000, 96 << 20
	cat, lk := smallCacheNode(t)
	done := make(chan auditexport.Result, 1)
	ex := auditexport.New(&synthetic{n: n}, cat, lk, auditexport.Options{Warehouse: wh, Interval: 50 * time.Millisecond,
		Now: func() time.Time { return time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC) },
		Observe: func(r auditexport.Result, err error) {
			if err != nil {
				t.Error(err)
			}
			if r.Records > 0 {
				select {
				case done <- r:
				default:
				}
			}
		}})
	stop := peakHeap()
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	res := <-done
	peak := stop()
	if res.Records != n || res.Commits != 1 {
		t.Fatalf("stream: %+v, want %d records in one commit", res, n)
	}
	tbl, err := lk.LoadTable(t.Context(), wh, auditexport.Ident())
	if err != nil {
		t.Fatal(err)
	}
	files := dataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d data files, want 1", len(files))
	}
	t.Logf("streamed %d records into one file of %.1f MiB; peak heap growth %.1f MiB (bound %d MiB)", res.Records,
		float64(files[0].File.FileSizeBytes())/(1<<20), float64(peak)/(1<<20), bound>>20)
	if peak > bound {
		t.Fatalf("peak heap grew by %.1f MiB during the stream, bound %d MiB", float64(peak)/(1<<20), bound>>20)
	}
}
