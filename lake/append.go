package lake

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// CommitAttempts is how often AppendFiles tries to commit while concurrent
// writers keep winning the race for the table's metadata pointer.
const CommitAttempts = 10

// WriteDataFiles writes the records of rdr as Parquet data files of tbl
// (split by its partition spec and target file size) and returns them. The
// files are not part of the table until they are committed (AppendFiles);
// on error, the files written so far are removed. opts tune the writer
// (target file size, buffering).
func WriteDataFiles(ctx context.Context, tbl *table.Table, rdr array.RecordReader, opts ...table.WriteRecordOption) ([]iceberg.DataFile, error) {
	// WriteRecords releases each batch it consumes; the reader releases it
	// again when it advances, so each batch is retained once for the writer.
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range array.IterFromReader(rdr) {
			if err != nil {
				yield(nil, err)
				return
			}
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
	}
	return WriteBatches(ctx, tbl, rdr.Schema(), batches, opts...)
}

// WriteBatches is WriteDataFiles over a sequence of batches of schema sc
// (each released once written, as table.WriteRecords does): a producer
// that builds its batches as they come (the audit export's stream) need
// not wrap them in a reader. On error, the files written so far are
// removed.
func WriteBatches(ctx context.Context, tbl *table.Table, sc *arrow.Schema, batches iter.Seq2[arrow.RecordBatch, error], opts ...table.WriteRecordOption) ([]iceberg.DataFile, error) {
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, batches, opts...) {
		if err != nil {
			removeFiles(ctx, tbl, files)
			return nil, fmt.Errorf("lake: write data files of %v: %w", tbl.Identifier(), err)
		}
		files = append(files, df)
	}
	return files, nil
}

// AppendFiles commits files (written by WriteDataFiles, or otherwise known
// to be new to the table) as one append snapshot whose summary carries
// props, and returns the table as committed. When a concurrent writer
// commits first, the table is reloaded and the files are appended on top
// of its new state (never replacing that writer's snapshot), up to
// CommitAttempts times. On a format-version 3 table each attempt numbers
// the files' rows from the table's next-row-id (AssignFirstRowIDs). The
// files are not removed on failure.
func AppendFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, props iceberg.Properties) (*table.Table, error) {
	return commitRetrying(ctx, tbl, func(txn *table.Transaction) error {
		staged, err := txn.StagedTable()
		if err != nil {
			return err
		}
		numbered, err := AssignFirstRowIDs(staged.Metadata(), files)
		if err != nil {
			return err
		}
		return txn.AddDataFiles(ctx, numbered, props, table.WithoutDuplicateCheck())
	})
}

// Append writes the records of rdr as data files of tbl and commits them
// as one append snapshot whose summary carries props (see AppendFiles).
// It returns the table as committed. On failure, the files written are
// removed.
func Append(ctx context.Context, tbl *table.Table, rdr array.RecordReader, props iceberg.Properties) (*table.Table, error) {
	files, err := WriteDataFiles(ctx, tbl, rdr)
	if err != nil {
		return nil, err
	}
	out, err := AppendFiles(ctx, tbl, files, props)
	if err != nil {
		if !errors.Is(err, table.ErrCommitFailed) {
			// The commit's outcome may be unknown: the files might be
			// referenced, so they are left for orphan cleanup.
			return nil, err
		}
		removeFiles(ctx, tbl, files)
		return nil, err
	}
	return out, nil
}

// AppendTable is Append for an Arrow table.
func AppendTable(ctx context.Context, tbl *table.Table, data arrow.Table, props iceberg.Properties) (*table.Table, error) {
	rdr := array.NewTableReader(data, 0)
	defer rdr.Release()
	return Append(ctx, tbl, rdr, props)
}

// commitRetrying runs stage on a fresh transaction of tbl and commits it;
// when the commit fails with table.ErrCommitFailed (a concurrent writer got
// in first; nothing was committed), it reloads the table and tries again.
func commitRetrying(ctx context.Context, tbl *table.Table, stage func(*table.Transaction) error) (*table.Table, error) {
	cur := tbl
	for attempt := 1; ; attempt++ {
		txn := cur.NewTransaction()
		if err := stage(txn); err != nil {
			return nil, fmt.Errorf("lake: commit to %v: %w", tbl.Identifier(), err)
		}
		next, err := txn.Commit(ctx)
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, table.ErrCommitFailed) || attempt >= CommitAttempts {
			return nil, fmt.Errorf("lake: commit to %v (attempt %d): %w", tbl.Identifier(), attempt, err)
		}
		if err := Pause(ctx, time.Duration(attempt)*10*time.Millisecond); err != nil {
			return nil, err
		}
		fresh, err := Reload(ctx, cur)
		if err != nil {
			return nil, err
		}
		cur = fresh
	}
}

// Reload returns tbl at the catalog's current metadata (tbl is unchanged).
// It fails if the table was dropped, or replaced by another table of the
// same name.
func Reload(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	fresh := *tbl
	if err := fresh.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("lake: reload %v: %w", tbl.Identifier(), err)
	}
	return &fresh, nil
}

// RemoveFiles deletes data files that were written but not committed.
// Failures are ignored: what is left is an orphan, never table data.
func RemoveFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	removeFiles(ctx, tbl, files)
}

func removeFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	if len(files) == 0 {
		return
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		_ = fsys.Remove(f.FilePath())
	}
}

// Pause waits d or until ctx is done (then it returns ctx's error): the
// back-off between attempts of a commit that lost a race.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
