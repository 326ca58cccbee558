// Package largetable builds the metadata of a large Iceberg table for
// speed tests of the console: manifests of 1,000 data files each (the data
// files themselves are not written), a manifest list, and one commit of
// many snapshots whose last one holds every file. It is shared by the Go
// test of the table page (console) and the command that builds the same
// table in a running Floe for the browser test (tests/console/largetable).
package largetable

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// FilesPerManifest is how many data files each manifest lists.
const FilesPerManifest = 1000

// Schema is the table's schema: one required long column, id.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
}

// Manifests writes, with write, the manifests of files data files (most
// small, some large) under the table location loc, all added by snapshot
// snap with sequence number snap, and returns them for a manifest list.
func Manifests(loc string, snap int64, files int, write func(path string, b []byte) error) ([]iceberg.ManifestFile, error) {
	loc = strings.TrimSuffix(loc, "/")
	spec := iceberg.NewPartitionSpec()
	sc := Schema()
	seq := snap
	var mfs []iceberg.ManifestFile
	for m := 0; m*FilesPerManifest < files; m++ {
		var entries []iceberg.ManifestEntry
		for i := m * FilesPerManifest; i < min(files, (m+1)*FilesPerManifest); i++ {
			size := int64(64<<10) + int64(i%97)*(1<<20) // most files small, some large
			b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("%s/data/f-%06d.parquet", loc, i),
				iceberg.ParquetFile, nil, nil, nil, 1000, size)
			if err != nil {
				return nil, err
			}
			id := snap
			entries = append(entries, iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, &seq, &seq, b.Build()))
		}
		path := fmt.Sprintf("%s/metadata/m-%04d.avro", loc, m)
		var buf bytes.Buffer
		mf, err := iceberg.WriteManifest(path, &buf, 2, spec, sc, snap, entries)
		if err != nil {
			return nil, err
		}
		if err := write(path, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		mfs = append(mfs, mf)
	}
	return mfs, nil
}

// ManifestList encodes the manifest list of snapshot snap (format v2,
// sequence number seq) listing mfs.
func ManifestList(snap int64, parent *int64, seq int64, mfs []iceberg.ManifestFile) ([]byte, error) {
	var buf bytes.Buffer
	if err := iceberg.WriteManifestList(2, &buf, snap, parent, &seq, 0, mfs); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Updates returns the commit's updates: snapshots 1 to last, one
// millisecond apart from startMs, each an append whose summary varies the
// rows added and removed, every one listing the manifest list empty except
// the last, which lists list; then the main branch set to the last.
func Updates(last, startMs int64, empty, list string) []map[string]any {
	var updates []map[string]any
	for i := int64(1); i <= last; i++ {
		s := map[string]any{"snapshot-id": i, "sequence-number": i, "timestamp-ms": startMs + i, "manifest-list": empty, "schema-id": 0,
			"summary": map[string]string{"operation": "append", "added-records": fmt.Sprint(1000 + i%50), "added-data-files": "20",
				"deleted-records": fmt.Sprint((i % 7) * 10)}}
		if i > 1 {
			s["parent-snapshot-id"] = i - 1
		}
		if i == last {
			s["manifest-list"] = list
		}
		updates = append(updates, map[string]any{"action": "add-snapshot", "snapshot": s})
	}
	return append(updates, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": last})
}
