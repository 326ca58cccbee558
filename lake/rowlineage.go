package lake

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// AssignFirstRowIDs prepares files, written by Floe and new to the table,
// for a commit on top of meta: on a format-version 3 table it returns
// copies with first_row_id set, numbering their rows consecutively from
// the table's next-row-id (the v3 row lineage the spec asks of writers);
// on older tables it returns files unchanged.
//
// The ids are only valid for a snapshot committed on top of meta (whose
// first-row-id is meta's next-row-id): a writer that loses a commit race
// must assign them again on the fresh metadata, as commitRetrying does.
// For the same reason a v3 table must not ask iceberg-go to retry a commit
// by itself (commit.retry.num-retries), which would move the snapshot's
// first-row-id under the ids assigned here.
func AssignFirstRowIDs(meta table.Metadata, files []iceberg.DataFile) ([]iceberg.DataFile, error) {
	if meta.Version() < 3 || len(files) == 0 {
		return files, nil
	}
	if n := meta.Properties().GetInt(table.CommitNumRetriesKey, 0); n > 0 {
		return nil, floe.E(floe.Unsupported, "table",
			"Floe cannot write to a format-version 3 table that sets %s (it retries commits itself and must renumber row ids on each attempt); remove the property", table.CommitNumRetriesKey)
	}
	next := meta.NextRowID()
	out := make([]iceberg.DataFile, len(files))
	for i, f := range files {
		c, err := withFirstRowID(meta, f, next)
		if err != nil {
			return nil, err
		}
		out[i] = c
		if f.Count() < 0 || next+f.Count() < next {
			return nil, floe.E(floe.Invalid, "table", "row ids of %s overflow", f.FilePath())
		}
		next += f.Count()
	}
	return out, nil
}

// withFirstRowID returns a copy of the data file f with first_row_id id.
func withFirstRowID(meta table.Metadata, f iceberg.DataFile, id int64) (iceberg.DataFile, error) {
	if f.ContentType() != iceberg.EntryContentData {
		return f, nil
	}
	spec := meta.PartitionSpecByID(int(f.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("lake: data file %s has unknown partition spec %d", f.FilePath(), f.SpecID())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, f.ContentType(), f.FilePath(), f.FileFormat(), f.Partition(), nil, nil, f.Count(), f.FileSizeBytes())
	if err != nil {
		return nil, fmt.Errorf("lake: copy data file %s: %w", f.FilePath(), err)
	}
	b.ColumnSizes(f.ColumnSizes()).ValueCounts(f.ValueCounts()).NullValueCounts(f.NullValueCounts()).
		NaNValueCounts(f.NaNValueCounts()).LowerBoundValues(f.LowerBoundValues()).UpperBoundValues(f.UpperBoundValues())
	if k := f.KeyMetadata(); k != nil {
		b.KeyMetadata(k)
	}
	if s := f.SplitOffsets(); s != nil {
		b.SplitOffsets(s)
	}
	if s := f.SortOrderID(); s != nil {
		b.SortOrderID(*s)
	}
	return b.FirstRowID(id).Build(), nil
}
