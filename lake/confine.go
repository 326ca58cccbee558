package lake

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// CheckSnapshot refuses (Forbidden) to read a snapshot of tbl whose
// manifest list lies outside tbl's location. With CheckTasks it is the
// second wall behind the catalog, which refuses commits that reference
// files outside a table's location: metadata committed before that check
// (or written behind the catalog's back) is not read either.
func CheckSnapshot(tbl *table.Table, snap *table.Snapshot) error {
	if snap == nil || snap.ManifestList == "" {
		return nil
	}
	return checkFile(tbl, "manifest list", snap.ManifestList)
}

// CheckTasks refuses (Forbidden) to read planned tasks of tbl when one of
// their data or delete files lies outside tbl's location; the error names
// the file and the location.
func CheckTasks(tbl *table.Table, tasks []table.FileScanTask) error {
	for _, t := range tasks {
		if err := checkFile(tbl, "data file", t.File.FilePath()); err != nil {
			return err
		}
		for _, group := range [][]string{paths(t.DeleteFiles), paths(t.EqualityDeleteFiles), paths(t.DeletionVectorFiles)} {
			for _, p := range group {
				if err := checkFile(tbl, "delete file", p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkFile(tbl *table.Table, what, file string) error {
	if catalog.Within(tbl.Location(), file) {
		return nil
	}
	return floe.E(floe.Forbidden, "file", "table %s references %s %s, which is outside the table location %s: Floe does not read it",
		strings.Join(tbl.Identifier(), "."), what, file, tbl.Location())
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

// CheckManifests refuses (Forbidden) a snapshot of tbl whose manifest
// list, manifests or manifest entries (every status, data and delete
// files) lie outside tbl's location. It reads every manifest of the
// snapshot: use it before a job that reads them all anyway.
func CheckManifests(ctx context.Context, tbl *table.Table, snap *table.Snapshot) error {
	if err := CheckSnapshot(tbl, snap); err != nil || snap == nil {
		return err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	ms, err := snap.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range ms {
		if err := checkFile(tbl, "manifest", m.FilePath()); err != nil {
			return err
		}
		for e, err := range m.Entries(fsys, false) {
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			what := "data file"
			if e.DataFile().ContentType() != iceberg.EntryContentData {
				what = "delete file"
			}
			if err := checkFile(tbl, what, e.DataFile().FilePath()); err != nil {
				return err
			}
		}
	}
	return nil
}
