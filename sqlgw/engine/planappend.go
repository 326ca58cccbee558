package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
)

// appendPlan plans every file of snapshot from its parent's cached plan
// when the snapshot only adds data files to its parent: each of the
// parent's manifests is still in the snapshot's list, unchanged (the same
// path; manifests are immutable), the others were written by the snapshot
// and hold only files it added, and no manifest of either holds deletes.
// Then the snapshot's files are its parent's and the added ones, none of
// the added ones has a delete file (there are none), and only the new
// manifests need reading, where iceberg-go's planner would read every
// manifest of the table again: a table appended to a row at a time (a
// stream, the soak's hot table) made each query's plan read hundreds of
// manifests, most of the SQL endpoint's allocation under such load.
// ok is false when the shortcut does not apply (no cached parent plan, a
// snapshot that rewrote or deleted anything); the caller then plans in
// full.
func (e *Engine) appendPlan(ctx context.Context, tbl *table.Table, snapshot int64) (tasks []table.FileScanTask, manifests []string, ok bool, err error) {
	snap := tbl.SnapshotByID(snapshot)
	if snap == nil || snap.ParentSnapshotID == nil {
		return nil, nil, false, nil
	}
	parentTasks, parentManifests, found := e.plans.manifestsOf(planKey{table: scopeOf(ctx).key(tbl.Metadata().TableUUID().String()), snapshot: *snap.ParentSnapshotID})
	if !found {
		return nil, nil, false, nil
	}
	fs, list, err := readManifests(ctx, tbl, snap)
	if err != nil {
		return nil, nil, false, err
	}
	kept := make(map[string]bool, len(parentManifests))
	for _, m := range parentManifests {
		kept[m] = false
	}
	var added []iceberg.ManifestFile
	for _, m := range list {
		if m.ManifestContent() != iceberg.ManifestContentData {
			return nil, nil, false, nil
		}
		if seen, ok := kept[m.FilePath()]; ok && !seen {
			kept[m.FilePath()] = true
			continue
		}
		if m.SnapshotID() != snapshot || m.HasExistingFiles() || m.DeletedDataFiles() != 0 {
			return nil, nil, false, nil
		}
		added = append(added, m)
	}
	for _, seen := range kept {
		if !seen {
			return nil, nil, false, nil
		}
	}
	var fresh []table.FileScanTask
	for _, m := range added {
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, false, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if entry.Status() != iceberg.EntryStatusADDED || entry.SnapshotID() != snapshot {
				return nil, nil, false, nil
			}
			df := entry.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				return nil, nil, false, nil
			}
			if df.Count() == 0 { // as the planner: empty files hold no rows
				continue
			}
			task := table.FileScanTask{File: df, Start: 0, Length: df.FileSizeBytes(), FirstRowID: df.FirstRowID()}
			if seq := entry.SequenceNum(); seq >= 0 {
				task.DataSequenceNumber = &seq
			}
			fresh = append(fresh, task)
		}
	}
	// The same wall as a full plan: never read a file outside the table.
	if err := lake.CheckTasks(tbl, fresh); err != nil {
		return nil, nil, false, err
	}
	return append(slices.Clip(parentTasks), fresh...), pathsOf(list), true, nil
}

// manifestPaths returns the paths of a snapshot's manifests.
func manifestPaths(ctx context.Context, tbl *table.Table, snapshot int64) ([]string, error) {
	snap := tbl.SnapshotByID(snapshot)
	if snap == nil {
		return nil, nil
	}
	_, list, err := readManifests(ctx, tbl, snap)
	if err != nil {
		return nil, err
	}
	return pathsOf(list), nil
}

// readManifests reads a snapshot's manifest list through the table's
// FileIO, which it returns for reading the manifests.
func readManifests(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (icebergio.IO, []iceberg.ManifestFile, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	list, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, fmt.Errorf("read the manifest list of %s snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
	}
	return fs, list, nil
}

// pathsOf returns the paths of manifests.
func pathsOf(list []iceberg.ManifestFile) []string {
	out := make([]string, len(list))
	for i, m := range list {
		out[i] = m.FilePath()
	}
	return out
}
