package maint_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/objstore/bucket"
)

// age sets the modification time of every object under dir (a local
// directory of the embedded store) to now-by.
func age(t *testing.T, dir string, by time.Duration) {
	t.Helper()
	old := time.Now().Add(-by)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plant writes an object at loc aged by the given duration.
func (e *lakeEnv) plant(t *testing.T, loc string, by time.Duration) {
	t.Helper()
	if err := lake.NewBucketFS(e.f.App.Objects()).WriteFile(loc, []byte("planted")); err != nil {
		t.Fatal(err)
	}
	if by > 0 {
		old := time.Now().Add(-by)
		if err := os.Chtimes(e.f.LocalPath(loc), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *lakeEnv) exists(t *testing.T, loc string) bool {
	t.Helper()
	_, err := lake.NewBucketFS(e.f.App.Objects()).Stat(loc)
	if err != nil && !strings.Contains(err.Error(), "not exist") {
		t.Fatal(err)
	}
	return err == nil
}

// TestOrphans: an unreferenced file older than the window is removed; a
// young one, every referenced file (data, manifests, manifest lists,
// metadata files) and the files of a table nested in the location are kept.
func TestOrphans(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "orph", "events", true, nil)
	for i := range int64(3) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	before := readContent(t, tbl)
	loc := tbl.Location()
	// Every file the table has is now 10 days old: age alone removes nothing.
	age(t, e.f.LocalPath(loc), 10*24*time.Hour)
	oldOrphan := loc + "/data/at_day=2026-03-01/00000-orphan.parquet"
	youngOrphan := loc + "/data/00001-young.parquet"
	nested := loc + "/inner/data/f.parquet"
	e.plant(t, oldOrphan, 4*24*time.Hour)
	e.plant(t, youngOrphan, 30*time.Minute)
	e.plant(t, loc+"/inner/metadata/00000-x.metadata.json", 0)
	e.plant(t, nested, 10*24*time.Hour)
	// A multipart upload under the location, abandoned long ago.
	objs := e.f.App.Objects()
	b, key := e.wh, strings.TrimPrefix(loc, "s3://"+e.wh+"/")+"/data/upload.parquet"
	if _, err := objs.CreateMultipart(ctx, b, key, bucket.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	job := maint.NewOrphans(e.env, objs)
	aborted := 0

	dry, err := job.RemoveOrphans(ctx, e.wh, id, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Stats["orphan_files"] != 1 || !slices.Equal(dry.Files, []string{oldOrphan}) || !e.exists(t, oldOrphan) {
		t.Fatalf("dry run: %+v", dry)
	}
	rep, err := job.RemoveOrphans(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats["orphan_files"] != 1 || e.exists(t, oldOrphan) {
		t.Fatalf("the old orphan is still there: %+v", rep)
	}
	if !e.exists(t, youngOrphan) || !e.exists(t, nested) {
		t.Fatal("a young orphan or a nested table's file was removed")
	}
	ups, err := objs.ListMultipartUploads(ctx, b, key)
	if err != nil {
		t.Fatal(err)
	}
	aborted += int(rep.Stats["aborted_uploads"])
	if len(ups) != 1 || aborted != 0 {
		t.Fatalf("a fresh upload was aborted (%d left, %d aborted)", len(ups), aborted)
	}
	if c := readContent(t, e.load(t, id)); c.hash != before.hash {
		t.Fatal("the table's content changed")
	}
	// With a clock three days ahead, the upload is abandoned.
	later := *e.env
	later.Now = func() time.Time { return time.Now().Add(73 * time.Hour) }
	rep, err = maint.NewOrphans(&later, objs).RemoveOrphans(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if ups, _ := objs.ListMultipartUploads(ctx, b, key); len(ups) != 0 || rep.Stats["aborted_uploads"] != 1 {
		t.Fatalf("abandoned upload not aborted: %+v", rep)
	}
}

// TestOrphansAfterCompactionAndExpiry: compaction replaces files, expiry
// drops the snapshots that had them, orphan removal deletes them; the
// table reads the same throughout.
func TestOrphansAfterCompactionAndExpiry(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "orph", "cycle", false, map[string]string{
		maint.PropMaxSnapshotAge: "1", maint.PropOrphanMinAge: "1h"})
	for i := range int64(6) {
		tbl = appendRows(t, tbl, i*10, i*10+10)
	}
	before := readContent(t, tbl)
	old := dataFiles(t, tbl)
	if _, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // older than max-snapshot-age-ms=1
	if res, err := maint.NewExpireSnapshots(e.f.App.Catalog(), maint.ExpireOptions{}).Run(ctx, maint.TableRef{Warehouse: e.wh, Ident: id}); err != nil || !res.Changed {
		t.Fatalf("expire: %+v, %v", res, err)
	}
	tbl = e.load(t, id)
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry", n)
	}
	age(t, e.f.LocalPath(tbl.Location()), 2*time.Hour)
	rep, err := maint.NewOrphans(e.env, nil).RemoveOrphans(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	for p := range old {
		if e.exists(t, p) {
			t.Errorf("replaced data file %s was not removed", p)
		}
	}
	// The old manifests and manifest lists went too.
	if rep.Stats["orphan_files"] <= int64(len(old)) {
		t.Errorf("removed %d files, want more than the %d data files", rep.Stats["orphan_files"], len(old))
	}
	if c := readContent(t, e.load(t, id)); c.hash != before.hash {
		t.Fatal("the table's content changed")
	}
}

// TestOrphansKeepLiveShareViews: a share catalog's derived view of a live
// snapshot (lake/subset) is unreferenced by the table's metadata but read
// by recipients: orphan removal keeps it, and removes the view of a
// snapshot the table no longer has.
func TestOrphansKeepLiveShareViews(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	id, tbl := e.createTable(t, "orph", "shared", true, nil)
	tbl = appendRows(t, tbl, 0, 10)
	loc := tbl.Location()
	snap := tbl.CurrentSnapshot()
	live := subset.Dir(loc, snap.SnapshotID, snap.ManifestList, "") + subset.ListName
	gone := subset.Dir(loc, snap.SnapshotID+1, "s3://x/expired.avro", "") + subset.ListName
	e.plant(t, live, 10*24*time.Hour)
	e.plant(t, gone, 10*24*time.Hour)
	rep, err := maint.NewOrphans(e.env, e.f.App.Objects()).RemoveOrphans(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if !e.exists(t, live) {
		t.Fatalf("the live snapshot's share view was removed: %+v", rep)
	}
	if e.exists(t, gone) || !slices.Contains(rep.Files, gone) {
		t.Fatalf("the view of a snapshot the table does not have was kept: %+v", rep)
	}
}
