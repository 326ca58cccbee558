package restcat

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// planBatchFiles is about the number of data files a large plan decodes
// at once: it plans groups of data manifests of about this many files
// (at least one manifest each), so that its memory is bounded by a batch,
// not by the table.
const planBatchFiles = 20_000

// planLarge plans a large scan (in the background): a point-in-time scan
// of a format v1 or v2 table is planned a batch of data manifests at a
// time, each batch planned by h.plan over the snapshot's manifest list
// narrowed to the batch's data manifests and every delete manifest (so
// deletes apply as they would to the whole), and the pages of the batches
// are concatenated: each page holds at most the page size, a batch's last
// page may hold fewer. Other scans are planned whole. Pages are deflated.
func (h *Handler) planLarge(ctx context.Context, st *catalog.TableState, key planKey, scan func(*table.Table) *scanPlan) (*planResult, error) {
	lists, err := h.manifestBatches(st, key)
	if err != nil {
		return nil, err
	}
	if lists == nil {
		return h.plan(ctx, st, key, batchScan(scan, nil), nil) // large plans are whole-table plans
	}
	out := &planResult{snapshot: key.snapshot, zipped: true}
	for _, list := range lists {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := h.plan(ctx, st, key, batchScan(scan, list), nil)
		if err != nil {
			return nil, err
		}
		if res.dataFiles == 0 {
			continue // its one page is empty
		}
		out.pages = append(out.pages, res.pages...)
		out.dataFiles += res.dataFiles
		out.deleteFile += res.deleteFile // delete files shared by batches count once per batch
	}
	if len(out.pages) == 0 {
		out.add([]byte(`"file-scan-tasks":[]`))
	}
	return out, nil
}

// batchScan marks a scan large and, given a narrowed manifest list, plans
// it over that list.
func batchScan(scan func(*table.Table) *scanPlan, list *manifestListIO) func(*table.Table) *scanPlan {
	return func(t *table.Table) *scanPlan {
		if list != nil {
			t = table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(),
				func(context.Context) (icebergio.IO, error) { return list, nil }, nil)
		}
		sp := scan(t)
		sp.zip = true
		return sp
	}
}

// manifestBatches returns the narrowed manifest lists of a large scan, or
// nil when it is planned whole (an incremental scan, a v3 table, a
// snapshot of one batch).
func (h *Handler) manifestBatches(st *catalog.TableState, key planKey) ([]*manifestListIO, error) {
	md := st.Metadata
	snap := md.SnapshotByID(key.snapshot)
	if key.start >= 0 || snap == nil || snap.ManifestList == "" || md.Version() > 2 {
		return nil, nil
	}
	fsys := h.plans.cfg.FS
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "cannot read the manifest list of snapshot %d", snap.SnapshotID)
	}
	var data, deletes []iceberg.ManifestFile
	for _, m := range mfs {
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			deletes = append(deletes, m)
		} else {
			data = append(data, m)
		}
	}
	var groups [][]iceberg.ManifestFile
	var cur []iceberg.ManifestFile
	n := 0
	for _, m := range data {
		files := int(m.AddedDataFiles() + m.ExistingDataFiles())
		if len(cur) > 0 && n+files > h.plans.async.batchFiles {
			groups, cur, n = append(groups, cur), nil, 0
		}
		cur, n = append(cur, m), n+files
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	if len(groups) < 2 {
		return nil, nil
	}
	lists := make([]*manifestListIO, 0, len(groups))
	for _, g := range groups {
		var buf bytes.Buffer
		seq := snap.SequenceNumber
		if err := iceberg.WriteManifestList(md.Version(), &buf, snap.SnapshotID, snap.ParentSnapshotID, &seq, 0,
			append(g, deletes...)); err != nil {
			return nil, floe.Wrap(floe.Internal, err, "cannot narrow the manifest list of snapshot %d", snap.SnapshotID)
		}
		lists = append(lists, &manifestListIO{IO: fsys, path: snap.ManifestList, list: buf.Bytes()})
	}
	return lists, nil
}

// manifestListIO reads through IO, except the manifest list at path,
// which it answers with list.
type manifestListIO struct {
	icebergio.IO
	path string
	list []byte
}

// Open implements icebergio.IO.
func (m *manifestListIO) Open(name string) (icebergio.File, error) {
	if name == m.path {
		return &memFile{Reader: bytes.NewReader(m.list), name: name, size: int64(len(m.list))}, nil
	}
	return m.IO.Open(name)
}

// ReadFile implements icebergio.ReadFileIO.
func (m *manifestListIO) ReadFile(name string) ([]byte, error) {
	if name == m.path {
		return m.list, nil
	}
	if r, ok := m.IO.(icebergio.ReadFileIO); ok {
		return r.ReadFile(name)
	}
	f, err := m.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// memFile is an icebergio.File in memory.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
