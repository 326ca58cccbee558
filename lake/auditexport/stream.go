package auditexport

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake"
)

// Bounds of one streamed commit (see Exporter.stream).
const (
	// StreamMaxRecords is the most records one streamed commit adds.
	StreamMaxRecords = 2_000_000
	// streamFileBytes is the size a streamed data file rolls over at.
	streamFileBytes = 128 << 20
	// streamRowGroup and streamRowGroupBytes bound the rows and encoded
	// bytes of a Parquet row group of a streamed file, and so the pages its
	// writer holds before a flush (about 7 MiB for 100,000 audit rows).
	streamRowGroup      = 100_000
	streamRowGroupBytes = 16 << 20
)

// streamWriteOptions write one file per day's partition with one writer
// goroutine, holding at most one batch in its queue.
var streamWriteOptions = []table.WriteRecordOption{
	table.WithMaxWriteWorkers(1),
	table.WithRecordBatchBufferSize(1),
	table.WithTargetFileSize(streamFileBytes),
	table.WithParquetRowGroupLimit(streamRowGroup),
}

// stream is the background export: it appends, in one commit, the records
// after the watermark that are stored until deadline. It reads them in
// batches (BatchSize records, BatchBytes of them) as they are waiting,
// woken by Options.Wake, and writes every batch into the same open data
// files (one per day's partition, rolling at 128 MiB) instead of a file and
// a commit per batch. So a busy interval costs one commit and leaves one
// large file per day, which the incremental compaction never has to read
// again, instead of a small file per batch that it would encode a second
// time: every record is encoded once. Memory stays bounded by one batch and
// one Parquet row group per open file.
//
// A zero or past deadline appends what is waiting now. Flush ends a
// stream's wait early. The stream commits at most StreamMaxRecords
// records at once; more waiting are streamed in the next commit. A stream
// that loses its commit to another writer removes its files and falls back
// to export, which reloads and goes on from the new watermark.
func (e *Exporter) stream(ctx context.Context, deadline time.Time, renew func() error) (Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var res Result
	tbl, err := e.table(ctx)
	if err != nil || tbl == nil {
		return res, err
	}
	for {
		last, err := Watermark(ctx, tbl)
		if err != nil {
			return res, err
		}
		res.LastSeq = last
		s := streamed{after: last}
		files, err := e.writeStream(ctx, tbl, &s, deadline, renew)
		if err != nil || s.n == 0 {
			return res, err
		}
		next, err := e.commitFiles(ctx, tbl, files, s.first, s.after)
		if errors.Is(err, table.ErrCommitFailed) {
			e.log.DebugContext(ctx, "audit export: another writer committed first; reloading", "err", err)
			r, err := e.exportLocked(ctx, renew)
			r.Records += res.Records
			r.Commits += res.Commits
			return r, err
		}
		if err != nil {
			return res, err
		}
		tbl = next
		res.Records += s.n
		res.Commits++
		res.LastSeq = s.after
		if !s.full {
			return res, nil
		}
		if renew != nil {
			if err := renew(); err != nil {
				return res, fmt.Errorf("audit export lease: %w", err)
			}
		}
	}
}

// streamed is what one stream has read so far.
type streamed struct {
	after, first int64 // last and first seq read (first: 0 before any)
	n            int64 // records read
	full         bool  // stopped at StreamMaxRecords
}

// writeStream writes the records after s.after that are stored until
// deadline into data files of tbl, and returns them (on error, the files
// written are removed).
func (e *Exporter) writeStream(ctx context.Context, tbl *table.Table, s *streamed, deadline time.Time, renew func() error) ([]iceberg.DataFile, error) {
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("audit export: arrow schema: %w", err)
	}
	files, err := lake.WriteBatches(ctx, tbl, asc, e.batches(ctx, tbl, s, deadline, renew), streamWriteOptions...)
	if err != nil {
		return nil, fmt.Errorf("audit export: write seq %d..%d: %w", s.first, s.after, err)
	}
	return files, nil
}

// renewEvery is how often a stream renews the export lease while it waits.
func (e *Exporter) renewEvery() time.Duration { return e.leaseTTL() / 4 }

// batches yields the Arrow batches of a stream (see stream), recording
// in s what they hold.
func (e *Exporter) batches(ctx context.Context, tbl *table.Table, s *streamed, deadline time.Time, renew func() error) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		renewed := time.Now()
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		for {
			recs, full, err := e.records(ctx, s.after)
			if err != nil {
				yield(nil, err)
				return
			}
			if len(recs) > 0 {
				if recs[0].Seq != s.after+1 && s.n > 0 {
					e.release(recs)
					yield(nil, floe.E(floe.Internal, "audit", "audit records are not contiguous: %d follows %d", recs[0].Seq, s.after))
					return
				}
				if s.n == 0 {
					s.first = recs[0].Seq
				}
				rec, err := e.arrowBatch(tbl, recs)
				s.n += int64(len(recs))
				s.after = recs[len(recs)-1].Seq
				e.release(recs)
				if err != nil {
					yield(nil, err)
					return
				}
				if !yield(rec, nil) {
					return
				}
				if s.n >= StreamMaxRecords {
					s.full = true
					return
				}
				if full {
					continue // more are waiting
				}
			}
			wait := time.Until(deadline)
			if wait <= 0 {
				return
			}
			if renew != nil && time.Since(renewed) >= e.renewEvery() {
				if err := renew(); err != nil {
					yield(nil, fmt.Errorf("audit export lease: %w", err))
					return
				}
				renewed = time.Now()
			}
			wait = min(wait, e.renewEvery())
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-e.wake: // nil: never
			case <-e.flush:
				deadline = time.Time{}
			case <-timer.C:
			}
		}
	}
}

// Flush ends the wait of a background stream now: what it has read is
// committed. Export calls it, so that it does not wait for the stream's
// interval to end.
func (e *Exporter) Flush() {
	select {
	case e.flush <- struct{}{}:
	default:
	}
}

// commitFiles appends files, holding the records first..last, in one
// snapshot that carries the new watermark, asserting that main is still
// the snapshot tbl was read at. On table.ErrCommitFailed nothing was
// committed and the files are removed.
func (e *Exporter) commitFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, first, last int64) (*table.Table, error) {
	props := iceberg.Properties{
		WatermarkProperty: fmt.Sprint(last),
		FirstSeqProperty:  fmt.Sprint(first),
	}
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		lake.RemoveFiles(ctx, tbl, files)
		return nil, fmt.Errorf("audit export: %w", err)
	}
	if err := txn.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
		lake.RemoveFiles(ctx, tbl, files)
		return nil, fmt.Errorf("audit export: %w", err)
	}
	next, err := txn.Commit(ctx)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			lake.RemoveFiles(ctx, tbl, files)
		} // otherwise the outcome is unknown: the files may be referenced
		return nil, fmt.Errorf("audit export: commit seq %d..%d: %w", first, last, err)
	}
	return next, nil
}
