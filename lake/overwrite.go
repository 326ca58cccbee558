package lake

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ReplaceAllFiles commits files as one overwrite snapshot that replaces
// every data file of the table's current snapshot, with props in its
// summary, and returns the table as committed. When a concurrent writer
// commits first, the table is reloaded and everything current at that
// point is replaced (the overwrite wins, but it never undoes a commit it
// did not see: that commit's files are replaced like the others), up to
// CommitAttempts times. The files are not removed on failure.
func ReplaceAllFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, props iceberg.Properties) (*table.Table, error) {
	return commitRetrying(ctx, tbl, func(txn *table.Transaction) error {
		staged, err := txn.StagedTable()
		if err != nil {
			return err
		}
		current, err := CurrentDataFiles(ctx, staged.Table)
		if err != nil {
			return err
		}
		if len(current) == 0 && len(files) == 0 {
			return nil
		}
		numbered, err := AssignFirstRowIDs(staged.Metadata(), files)
		if err != nil {
			return err
		}
		if len(current) == 0 {
			return txn.AddDataFiles(ctx, numbered, props, table.WithoutDuplicateCheck())
		}
		return txn.ReplaceDataFilesWithDataFiles(ctx, current, numbered, props)
	})
}

// CurrentDataFiles returns the data files of tbl's current snapshot (none
// without one).
func CurrentDataFiles(ctx context.Context, tbl *table.Table) ([]iceberg.DataFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("lake: list data files of %v: %w", tbl.Identifier(), err)
	}
	var out []iceberg.DataFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return nil, fmt.Errorf("lake: list data files of %v: %w", tbl.Identifier(), err)
			}
			out = append(out, e.DataFile())
		}
	}
	return out, nil
}
