package auditexport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floe-lake/floe/audit"
)

// noStore is the store behind a tail that holds every record asked for.
type noStore struct{ t *testing.T }

func (s noStore) AuditRecords(context.Context, int64, int) ([]audit.Record, error) {
	s.t.Error("the store was read: the tail holds every record")
	return nil, nil
}

// TestRecordsReuseTheBuffer: the export reads its batches from the tail
// into one buffer it keeps, so that a batch costs no allocation, and lets
// go of the records' strings once the batch is committed.
func TestRecordsReuseTheBuffer(t *testing.T) {
	const batch, batches = 2000, 6
	tail := audit.NewTail(noStore{t}, batch*batches, 1<<30, 0)
	var rs []audit.Record
	for i := int64(1); i <= batch*batches; i++ {
		rs = append(rs, audit.Record{Seq: i, Time: time.Unix(i, 0).UTC(), RequestID: fmt.Sprintf("req-%d", i),
			Action: "catalog.loadTable", Outcome: "success", Detail: []byte(`{}`), Hash: "ab"})
	}
	tail.Add(rs)
	e := New(tail, nil, nil, Options{Warehouse: "floe", BatchSize: batch})
	last := int64(0)
	read := func() {
		recs, full, err := e.records(t.Context(), last)
		if err != nil || !full || len(recs) != batch || recs[0].Seq != last+1 || recs[batch-1].Seq != last+batch {
			t.Fatalf("after %d: %d records (full %v), %v", last, len(recs), full, err)
		}
		last += batch
		e.release(recs)
	}
	read() // the first batch makes the buffer
	if allocs := testing.AllocsPerRun(batches-2, read); allocs != 0 {
		t.Errorf("reading a batch of %d records from the tail: %.0f allocations, want 0", batch, allocs)
	}
	for i, r := range e.buf[:cap(e.buf)] {
		if r.RequestID != "" || r.Detail != nil {
			t.Fatalf("record %d of the buffer still holds %q after its batch was released", i, r.RequestID)
		}
	}
}

// TestBatchesReuseArrowBuffers: the Arrow buffers of a batch go back to
// the exporter's allocator once released (nothing keeps them), and the
// batch after the next is built from them (the next one's writer may still
// read them).
func TestBatchesReuseArrowBuffers(t *testing.T) {
	var recs []audit.Record
	for i := int64(1); i <= 1000; i++ {
		recs = append(recs, audit.Record{Seq: i, Time: time.Unix(i, 0).UTC(), RequestID: fmt.Sprintf("req-%d", i),
			Action: "catalog.loadTable", Outcome: "success", Detail: []byte(`{"a":1}`), Hash: "ab"})
	}
	a := newBatchAllocator(1 << 20)
	build := func() {
		a.recycle()
		rec, err := toArrow(a, Schema(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != int64(len(recs)) {
			t.Fatalf("%d rows", rec.NumRows())
		}
		rec.Release()
	}
	build()
	kept := a.kept()
	if kept == 0 {
		t.Fatal("releasing the batch gave no buffer back to the allocator")
	}
	build()
	if a.kept() != 2*kept {
		t.Fatalf("two batches kept %d bytes, the first %d", a.kept(), kept)
	}
	build()
	if a.kept() != 2*kept {
		t.Fatalf("the third batch kept %d bytes, two %d: it did not reuse the first one's buffers", a.kept(), 2*kept)
	}
	allocs := testing.AllocsPerRun(3, build)
	plain := testing.AllocsPerRun(3, func() {
		rec, err := toArrow(memory.NewGoAllocator(), Schema(), recs)
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
	})
	if allocs >= plain {
		t.Errorf("a batch from reused buffers: %.0f allocations, from the Go allocator %.0f", allocs, plain)
	}
}
