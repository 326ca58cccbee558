package catalog_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/bypass"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

const wh = "floe"

var (
	hr      = catalog.Namespace{"hr"}
	sandbox = catalog.Namespace{"sandbox"}
)

// confineEnv is a catalog over a fresh SQLite store and embedded object
// store with a table hr.payroll holding rows, and a lake that commits
// through the catalog (lk) or below its checks (raw).
type confineEnv struct {
	cat  *catalog.Catalog
	st   *sqlstore.Store
	objs *bucket.Store
	lk   *lake.Lake
	raw  *lake.Lake
}

func newConfineEnv(t testing.TB) *confineEnv {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{wh: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: "s3://" + wh}); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	for _, ns := range []catalog.Namespace{hr, sandbox} {
		if err := cat.CreateNamespace(ctx, wh, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	e := &confineEnv{cat: cat, st: st, objs: objs,
		lk:  lake.New(cat, lake.NewBucketFS(objs), lake.Options{}),
		raw: lake.New(bypass.Tables{Cat: cat, Store: st, IO: objs.FileIO()}, lake.NewBucketFS(objs), lake.Options{})}
	e.create(t, catalog.Ident{Namespace: hr, Name: "payroll"}, "")
	if _, err := lake.AppendTable(ctx, e.load(t, catalog.Ident{Namespace: hr, Name: "payroll"}), rowsOf(t, 1, 2, 3), nil); err != nil {
		t.Fatal(err)
	}
	return e
}

var payroll = catalog.Ident{Namespace: hr, Name: "payroll"}

func (e *confineEnv) create(t testing.TB, id catalog.Ident, loc string) {
	t.Helper()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := e.cat.CreateTable(t.Context(), wh, id.Namespace, catalog.CreateTableRequest{Name: id.Name, Schema: sc, Location: loc}); err != nil {
		t.Fatal(err)
	}
}

func (e *confineEnv) load(t testing.TB, id catalog.Ident) *table.Table {
	t.Helper()
	tbl, err := e.lk.LoadTable(t.Context(), wh, id)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func rowsOf(t testing.TB, ids ...int64) arrow.Table {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// payrollFiles returns hr.payroll's current snapshot, its manifests and data files.
func (e *confineEnv) payrollFiles(t testing.TB) (*table.Snapshot, []iceberg.ManifestFile, []iceberg.DataFile) {
	t.Helper()
	tbl := e.load(t, payroll)
	snap := tbl.CurrentSnapshot()
	fsys, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := snap.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.CurrentDataFiles(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return snap, ms, files
}

// writeList writes a manifest list of ms at loc.
func (e *confineEnv) writeList(t testing.TB, loc string, id int64, ms []iceberg.ManifestFile) {
	t.Helper()
	var buf bytes.Buffer
	seq := int64(1)
	if err := iceberg.WriteManifestList(2, &buf, id, nil, &seq, 0, ms); err != nil {
		t.Fatal(err)
	}
	if err := e.objs.FileIO().WriteFile(t.Context(), loc, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func addSnapshot(id int64, list string) table.Updates {
	return table.Updates{
		table.NewAddSnapshotUpdate(&table.Snapshot{SnapshotID: id, SequenceNumber: 1, TimestampMs: time.Now().UnixMilli(),
			ManifestList: list, Summary: &table.Summary{Operation: table.OpAppend}}),
		table.NewSetSnapshotRefUpdate("main", id, table.BranchRef, -1, -1, -1),
	}
}

// wantRefused checks that err is Invalid naming every one of names, and
// that the table's metadata pointer did not move.
func (e *confineEnv) wantRefused(t *testing.T, id catalog.Ident, before string, err error, names ...string) {
	t.Helper()
	if floe.KindOf(err) != floe.Invalid {
		t.Fatalf("err = %v (kind %v), want Invalid", err, floe.KindOf(err))
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
	ent, lerr := e.cat.TableLocationInfo(t.Context(), wh, id)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if ent.MetadataLocation != before {
		t.Errorf("metadata pointer moved from %s to %s", before, ent.MetadataLocation)
	}
}

// TestCommitConfinesFiles: every file a commit adds to a table's metadata
// (data and delete files, manifests, manifest lists, statistics) must lie
// inside the table's location; otherwise the commit is refused and nothing
// moves.
func TestCommitConfinesFiles(t *testing.T) {
	e := newConfineEnv(t)
	ctx := t.Context()
	hrSnap, hrManifests, hrFiles := e.payrollFiles(t)
	hrLoc := e.load(t, payroll).Location()

	tests := []struct {
		name    string
		prep    bool // append a row legitimately first
		attack  func(t *testing.T, id catalog.Ident, loc string) error
		mention func(loc string) []string
	}{
		{"foreign data file (fast append)", false, func(t *testing.T, id catalog.Ident, loc string) error {
			_, err := lake.AppendFiles(ctx, e.load(t, id), hrFiles, nil)
			return err
		}, func(loc string) []string { return []string{hrFiles[0].FilePath(), loc} }},
		{"foreign manifest in an own manifest list", false, func(t *testing.T, id catalog.Ident, loc string) error {
			list := loc + "/metadata/snap-77-attack.avro"
			e.writeList(t, list, 77, hrManifests)
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: addSnapshot(77, list)})
			return err
		}, func(loc string) []string { return []string{hrManifests[0].FilePath(), loc} }},
		{"foreign manifest list", false, func(t *testing.T, id catalog.Ident, loc string) error {
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: addSnapshot(78, hrSnap.ManifestList)})
			return err
		}, func(loc string) []string { return []string{hrSnap.ManifestList, loc} }},
		{"manifest list escaping with ..", false, func(t *testing.T, id catalog.Ident, loc string) error {
			rel := loc + "/../../" + strings.TrimPrefix(hrSnap.ManifestList, "s3://floe/")
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: addSnapshot(79, rel)})
			return err
		}, func(loc string) []string { return []string{loc} }},
		{"statistics file outside", true, func(t *testing.T, id catalog.Ident, loc string) error {
			own := e.load(t, id)
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: table.Updates{table.NewSetStatisticsUpdate(table.StatisticsFile{
				SnapshotID: own.CurrentSnapshot().SnapshotID, StatisticsPath: hrLoc + "/metadata/x.stats", FileSizeInBytes: 1, BlobMetadata: []table.BlobMetadata{}})}})
			return err
		}, func(loc string) []string { return []string{hrLoc + "/metadata/x.stats", loc} }},
		{"partition statistics file outside", true, func(t *testing.T, id catalog.Ident, loc string) error {
			own := e.load(t, id)
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: table.Updates{table.NewSetPartitionStatisticsUpdate(table.PartitionStatisticsFile{
				SnapshotID: own.CurrentSnapshot().SnapshotID, StatisticsPath: hrLoc + "/metadata/p.stats", FileSizeInBytes: 1})}})
			return err
		}, func(loc string) []string { return []string{hrLoc + "/metadata/p.stats", loc} }},
		{"set-location leaving files behind", true, func(t *testing.T, id catalog.Ident, loc string) error {
			_, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: table.Updates{table.NewSetLocationUpdate("s3://floe/sandbox/elsewhere-" + id.Name)}})
			return err
		}, func(loc string) []string { return []string{loc} }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := catalog.Ident{Namespace: sandbox, Name: fmt.Sprintf("t%d", i)}
			e.create(t, id, "")
			own := e.load(t, id)
			if tc.prep {
				if _, err := lake.AppendTable(ctx, own, rowsOf(t, 9), nil); err != nil {
					t.Fatal(err)
				}
			}
			ent, err := e.cat.TableLocationInfo(ctx, wh, id)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.attack(t, id, own.Location())
			if err == nil {
				t.Fatalf("attack accepted")
			}
			e.wantRefused(t, id, ent.MetadataLocation, err, tc.mention(own.Location())...)
			if got := e.load(t, id).CurrentSnapshot(); got != nil {
				for _, f := range mustFiles(t, e.load(t, id)) {
					if !strings.HasPrefix(f, own.Location()+"/") {
						t.Errorf("table references %s outside %s", f, own.Location())
					}
				}
			}
		})
	}

	// What stays allowed: appends and statistics inside the location.
	t.Run("inside the location", func(t *testing.T) {
		id := catalog.Ident{Namespace: sandbox, Name: "ok"}
		e.create(t, id, "")
		for range 3 {
			if _, err := lake.AppendTable(ctx, e.load(t, id), rowsOf(t, 1, 2), nil); err != nil {
				t.Fatal(err)
			}
		}
		own := e.load(t, id)
		if _, err := e.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: table.Updates{table.NewSetStatisticsUpdate(table.StatisticsFile{
			SnapshotID: own.CurrentSnapshot().SnapshotID, StatisticsPath: own.Location() + "/metadata/x.stats", FileSizeInBytes: 1, BlobMetadata: []table.BlobMetadata{}})}}); err != nil {
			t.Fatal(err)
		}
		if n := len(mustFiles(t, e.load(t, id))); n != 3 {
			t.Errorf("%d data files, want 3", n)
		}
	})
}

func mustFiles(t testing.TB, tbl *table.Table) []string {
	t.Helper()
	files, err := lake.CurrentDataFiles(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.FilePath())
	}
	return out
}

// TestRegisterConfinesFiles: a metadata file whose snapshots reference
// files outside its location (written where the caller may write) cannot
// be registered.
func TestRegisterConfinesFiles(t *testing.T) {
	e := newConfineEnv(t)
	ctx := t.Context()
	_, _, hrFiles := e.payrollFiles(t)
	src := catalog.Ident{Namespace: sandbox, Name: "src"}
	e.create(t, src, "s3://floe/sandbox/mine")
	srcTbl, err := e.raw.LoadTable(ctx, wh, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.AppendFiles(ctx, srcTbl, hrFiles, nil); err != nil {
		t.Fatal(err)
	}
	st, err := e.cat.UnregisterTable(ctx, wh, src)
	if err != nil {
		t.Fatal(err)
	}
	dst := catalog.Ident{Namespace: sandbox, Name: "stolen"}
	_, err = e.cat.RegisterTable(ctx, wh, dst, st.Location, false)
	if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), hrFiles[0].FilePath()) {
		t.Fatalf("register = %v, want Invalid naming %s", err, hrFiles[0].FilePath())
	}
	if ok, _ := e.cat.Exists(ctx, wh, dst, catalog.KindTable); ok {
		t.Error("the refused register created the table")
	}

	// A metadata file whose files are all inside its location registers.
	ok := catalog.Ident{Namespace: sandbox, Name: "own"}
	e.create(t, ok, "s3://floe/sandbox/own")
	if _, err := lake.AppendTable(ctx, e.load(t, ok), rowsOf(t, 1), nil); err != nil {
		t.Fatal(err)
	}
	// Its owner (who could read it) unregisters it and registers it again:
	// the tombstone the unregister leaves is the owner's to reuse.
	owner := catalog.WithClaimant(ctx, catalog.Claimant{Principal: "owner", CanRead: true})
	st, err = e.cat.UnregisterTable(owner, wh, ok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.RegisterTable(owner, wh, ok, st.Location, false); err != nil {
		t.Fatal(err)
	}
}
