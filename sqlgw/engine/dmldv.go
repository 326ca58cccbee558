package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/floe-lake/floe/lake"
)

// Write mode properties of a table for UPDATE and MERGE (DELETE's is
// table.WriteDeleteModeKey), as Spark and the Iceberg spec name them.
const (
	writeUpdateModeKey = "write.update.mode"
	writeMergeModeKey  = "write.merge.mode"
)

// mergeOnRead reports whether a DELETE, UPDATE or MERGE (kind) on tbl
// deletes rows with deletion vectors instead of rewriting their files: on
// a format-version 3 table whose write mode for the statement is
// merge-on-read (copy-on-write is the default, as in Iceberg).
func mergeOnRead(tbl *table.Table, kind dmlKind) bool {
	if tbl.Metadata().Version() < 3 {
		return false
	}
	key := table.WriteDeleteModeKey
	switch kind {
	case dmlUpdate:
		key = writeUpdateModeKey
	case dmlMerge:
		key = writeMergeModeKey
	}
	return tbl.Properties().Get(key, table.WriteModeCopyOnWrite) == table.WriteModeMergeOnRead
}

// commitRowDelta commits a change (the rows of the change table chg) as
// one row delta: a deletion vector for each affected file holding its
// earlier deleted positions and the changed rows' (it replaces the file's
// old vector), and new data files for the rows an UPDATE or MERGE writes.
func (st *dmlStmt) commitRowDelta(ctx context.Context, pl *dmlPlan, chg string, affected []scanFile, out *dmlOutcome) error {
	ss := st.ss
	fsys, err := pl.tbl.FS(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("engine: the file system of %s cannot write", out.target)
	}
	meta := pl.tbl.Metadata()
	w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	var oldDVs []iceberg.DataFile
	for _, f := range affected {
		df := f.task.File
		if err := st.deletedPositions(ctx, chg, f.path, func(pos []int64) error {
			return w.Add(df.FilePath(), pos, df.SpecID(), df.Partition())
		}); err != nil {
			return err
		}
		for _, old := range f.task.DeletionVectorFiles {
			blob, err := ss.e.files.readRange(ctx, old.FilePath(), derefOr(old.ContentOffset()), derefOr(old.ContentSizeInBytes()))
			if err != nil {
				return err
			}
			bm, err := decodeDV(blob, old.Count(), df.Count())
			if err != nil {
				return fmt.Errorf("engine: deletion vector %s: %w", old.FilePath(), err)
			}
			var prev []int64
			for p := range bm.Positions() {
				prev = append(prev, int64(p))
			}
			if err := w.Add(df.FilePath(), prev, df.SpecID(), df.Partition()); err != nil {
				return err
			}
			oldDVs = append(oldDVs, old)
		}
	}
	// The rows an UPDATE or MERGE writes, an updated row with the _row_id
	// of the row it replaces.
	kept, err := pl.scan.sqlWith(affected, true)
	if err != nil {
		return err
	}
	asc, writeOpts, err := lineageWrite(pl)
	if err != nil {
		return err
	}
	files, _, err := st.writeRows(ctx, pl, asc, lineageContent(pl, kept, chg, false), nil, writeOpts...)
	if err != nil {
		return err
	}
	written := files
	dvs, err := w.Flush(ctx, strings.TrimSuffix(pl.tbl.Location(), "/")+"/data/"+uuid.NewString()+"-deletes.puffin")
	if err != nil {
		lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, written)
		return fmt.Errorf("engine: write deletion vectors: %w", err)
	}
	written = append(written, dvs...)
	if files, err = lake.AssignFirstRowIDs(meta, files); err != nil {
		lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, written)
		return err
	}
	txn := pl.tbl.NewTransaction()
	rd := txn.NewRowDelta(st.snapshotProps()).AddRows(files...).AddDeletes(dvs...)
	if len(oldDVs) > 0 {
		rd.RemoveDeletes(oldDVs...)
	}
	if err := rd.Commit(ctx); err != nil {
		lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, written)
		return err
	}
	return commitDML(ctx, pl, txn, written, out)
}

// deletedPositions hands add the positions of the target rows in the file
// DuckDB reads at path that the change chg deletes or replaces, a batch at
// a time.
func (st *dmlStmt) deletedPositions(ctx context.Context, chg, path string, add func([]int64) error) error {
	rows, err := st.ss.conn.QueryContext(ctx, "SELECT __floe_p FROM "+chg+" WHERE __floe_f = "+sqlString(path), nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	buf := make([]driver.Value, 1)
	batch := make([]int64, 0, dvBatchRows)
	for {
		if err := rows.Next(buf); err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
		p, ok := buf[0].(int64)
		if !ok {
			return fmt.Errorf("engine: row position %v (%T) of a change", buf[0], buf[0])
		}
		if batch = append(batch, p); len(batch) == cap(batch) {
			if err := add(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return add(batch)
	}
	return nil
}

func derefOr(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
