package lake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/store/sqlstore"
)

const wh = "floe"

var ns = catalog.Namespace{"lk"}

// env is a catalog over a fresh SQLite store and embedded object store.
type env struct {
	cat  *catalog.Catalog
	objs *bucket.Store
	lk   *lake.Lake
}

func newEnv(t *testing.T, encrypted bool) *env {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o := bucket.Options{Buckets: map[string]string{wh: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")}
	if encrypted {
		key, err := sse.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		kr, err := sse.ParseKeyring([]byte("k1 " + key))
		if err != nil {
			t.Fatal(err)
		}
		o.Encryption = kr
	}
	objs, err := bucket.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: "s3://" + wh}); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	if err := cat.CreateNamespace(ctx, wh, ns, nil); err != nil {
		t.Fatal(err)
	}
	return &env{cat: cat, objs: objs, lk: lake.New(cat, lake.NewBucketFS(objs), lake.Options{})}
}

// eventsSchema is a table partitioned by day(at).
func eventsSchema() (*iceberg.Schema, *iceberg.PartitionSpec) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "who", Type: iceberg.PrimitiveTypes.String},
	)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.DayTransform{}, Name: "at_day"})
	return sc, &spec
}

func (e *env) createTable(t *testing.T, name string) *table.Table {
	t.Helper()
	sc, spec := eventsSchema()
	if _, err := e.cat.CreateTable(t.Context(), wh, ns, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rows builds an Arrow table of ids [from, to) spread over three days.
func rows(t *testing.T, tbl *table.Table, from, to int64) arrow.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(time.Duration(i%3) * 24 * time.Hour).UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("user-%d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
}

// scanIDs reads every id of the table's current snapshot, sorted.
func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []int64
	for _, c := range at.Column(0).Data().Chunks() {
		out = append(out, c.(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestAppendAndScan: appended Arrow data reads back with an iceberg-go scan,
// partitioned by day, with the snapshot properties in the summary; on
// plaintext and encrypted storage.
func TestAppendAndScan(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypted=%v", encrypted), func(t *testing.T) {
			e := newEnv(t, encrypted)
			tbl := e.createTable(t, "events")
			data := rows(t, tbl, 0, 1000)
			defer data.Release()
			got, err := lake.AppendTable(t.Context(), tbl, data, iceberg.Properties{"floe.test": "one"})
			if err != nil {
				t.Fatal(err)
			}
			data2 := rows(t, got, 1000, 1500)
			defer data2.Release()
			if got, err = lake.AppendTable(t.Context(), got, data2, iceberg.Properties{"floe.test": "two"}); err != nil {
				t.Fatal(err)
			}
			// Read back through a freshly loaded table, as another process would.
			fresh, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "events"})
			if err != nil {
				t.Fatal(err)
			}
			if fresh.MetadataLocation() != got.MetadataLocation() {
				t.Errorf("catalog points at %s, the commit returned %s", fresh.MetadataLocation(), got.MetadataLocation())
			}
			if ids := scanIDs(t, fresh); !slices.Equal(ids, seq(0, 1500)) {
				t.Fatalf("scanned %d ids, want 0..1499", len(ids))
			}
			snap := fresh.CurrentSnapshot()
			if snap == nil || snap.Summary == nil || snap.Summary.Properties["floe.test"] != "two" || snap.Summary.Operation != table.OpAppend {
				t.Fatalf("current snapshot summary = %+v", snap)
			}
			if n := len(fresh.Metadata().Snapshots()); n != 2 {
				t.Errorf("%d snapshots, want 2", n)
			}
			// Partitioning: every data file holds one day.
			days := map[any]bool{}
			tasks, err := fresh.Scan().PlanFiles(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				for _, v := range task.File.Partition() {
					days[v] = true
				}
			}
			if len(days) != 3 {
				t.Errorf("data files cover %d day partitions, want 3: %v", len(days), days)
			}
			// A filtered scan prunes by partition and still finds its rows.
			day1 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
			filtered := fresh.Scan(table.WithRowFilter(iceberg.NewAnd(
				iceberg.GreaterThanEqual(iceberg.Reference("at"), day1.UnixMicro()),
				iceberg.LessThan(iceberg.Reference("at"), day1.Add(24*time.Hour).UnixMicro()))))
			at, err := filtered.ToArrowTable(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if at.NumRows() != 500 {
				t.Errorf("one day holds %d rows, want 500", at.NumRows())
			}
			at.Release()
		})
	}
}

// TestConcurrentAppends: two goroutines append to the same table from the
// same (soon stale) table handle; every commit lands, none is lost.
func TestConcurrentAppends(t *testing.T) {
	e := newEnv(t, false)
	tbl := e.createTable(t, "busy")
	const writers, each, per = 2, 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur := tbl
			for i := range each {
				from := int64((w*each + i) * per)
				data := rows(t, cur, from, from+per)
				next, err := lake.AppendTable(context.Background(), cur, data, iceberg.Properties{"writer": fmt.Sprint(w)})
				data.Release()
				if err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, i, err)
					return
				}
				if i%2 == 0 {
					cur = next
				} // odd appends start from a stale handle on purpose
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fresh, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, fresh); !slices.Equal(ids, seq(0, writers*each*per)) {
		t.Fatalf("scanned %d ids, want %d (0..%d)", len(ids), writers*each*per, writers*each*per-1)
	}
	// The snapshots form one line of ancestry: nothing was replaced.
	n := 0
	for range table.AncestorsOf(fresh.CurrentSnapshot().SnapshotID, fresh.SnapshotByID) {
		n++
	}
	if n != writers*each {
		t.Errorf("the current snapshot has %d ancestors (itself included), want %d", n, writers*each)
	}
}

// TestCommitConflictIsCommitFailed: a commit whose requirement fails
// reaches iceberg-go as table.ErrCommitFailed, and nothing is committed.
func TestCommitConflictIsCommitFailed(t *testing.T) {
	e := newEnv(t, false)
	tbl := e.createTable(t, "pinned")
	data := rows(t, tbl, 0, 10)
	defer data.Release()
	if _, err := lake.AppendTable(t.Context(), tbl, data, nil); err != nil {
		t.Fatal(err)
	}
	// tbl is stale now: a transaction pinned to its (empty) main fails.
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		t.Fatal(err)
	}
	if err := txn.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(t.Context()); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit on a stale pin: %v, want ErrCommitFailed", err)
	}
	fresh, err := lake.Reload(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.Properties()["k"]; ok {
		t.Error("the failed commit changed the table")
	}
	if len(scanIDs(t, fresh)) != 10 {
		t.Error("the table lost rows")
	}
}

// TestBucketFS checks the FileIO contract iceberg-go relies on: streamed
// writes appear whole on Close, ranged and sequential reads, Seek, Stat,
// missing objects as fs.ErrNotExist, and bad locations as fs.ErrInvalid.
func TestBucketFS(t *testing.T) {
	e := newEnv(t, true)
	fsys := lake.NewBucketFS(e.objs)
	loc := "s3://floe/lk/x/data/f.bin"
	w, err := fsys.Create(loc)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 3<<20+17)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	if _, err := w.Write(payload[:1000]); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(loc); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an object being written is visible: %v", err)
	}
	if _, err := w.ReadFrom(byteReader(payload[1000:])); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	fi, err := fsys.Stat(loc)
	if err != nil || fi.Size() != int64(len(payload)) || fi.Name() != "f.bin" || fi.IsDir() {
		t.Fatalf("stat: %v %v", fi, err)
	}
	all, err := fsys.ReadFile(loc)
	if err != nil || !slices.Equal(all, payload) {
		t.Fatalf("ReadFile: %d bytes, %v", len(all), err)
	}
	f, err := fsys.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		off, n  int64
		wantN   int
		wantEOF bool
	}{
		{0, 10, 10, false},
		{1 << 20, 4096, 4096, false},
		{int64(len(payload)) - 5, 10, 5, true},
		{int64(len(payload)), 10, 0, true},
	} {
		p := make([]byte, tc.n)
		n, err := f.ReadAt(p, tc.off)
		if n != tc.wantN || (err == io.EOF) != tc.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d, %d) = %d, %v", tc.off, tc.n, n, err)
			continue
		}
		if !slices.Equal(p[:n], payload[tc.off:tc.off+int64(n)]) {
			t.Errorf("ReadAt(%d, %d) returned wrong bytes", tc.off, tc.n)
		}
	}
	if _, err := f.Seek(-100, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(f)
	if err != nil || !slices.Equal(tail, payload[len(payload)-100:]) {
		t.Fatalf("read after Seek: %d bytes, %v", len(tail), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(f)
	if err != nil || !slices.Equal(whole, payload) {
		t.Fatalf("sequential read: %d bytes, %v", len(whole), err)
	}
	if err := fsys.WriteFile(loc, []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 4), 0); err == nil {
		t.Error("reading an object replaced since Open succeeded")
	}
	if err := fsys.Remove(loc); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(loc); err != nil {
		t.Fatalf("removing a missing object: %v", err)
	}
	for _, op := range []func() error{
		func() error { _, err := fsys.Open(loc); return err },
		func() error { _, err := fsys.ReadFile(loc); return err },
		func() error { _, err := fsys.Stat(loc); return err },
	} {
		if err := op(); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing object: %v, want fs.ErrNotExist", err)
		}
	}
	for _, bad := range []string{"file:///etc/passwd", "s3://floe", "s3://floe/", "/tmp/x"} {
		if _, err := fsys.Open(bad); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open(%q): %v, want fs.ErrInvalid", bad, err)
		}
		if _, err := fsys.Create(bad); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Create(%q): %v, want fs.ErrInvalid", bad, err)
		}
	}
}

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// byteReader hides any WriterTo, so that ReadFrom streams in chunks.
func byteReader(b []byte) io.Reader { return onlyReader{r: &sliceReader{b: b}} }

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b[:min(len(s.b), 64<<10)])
	s.b = s.b[n:]
	return n, nil
}

// TestS3FS: the external-S3 FileIO (iceberg-go's S3 IO with the server's
// own AWS configuration) writes and reads a table's data files; Floe's
// embedded S3 endpoint stands in for S3.
func TestS3FS(t *testing.T) {
	e := newEnv(t, false)
	srv := httptest.NewServer(s3api.New(s3api.Options{Store: e.objs})) // authentication off: any key works
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "floe-test-secret", "")}
	fsys, err := lake.NewS3FS(context.Background(), cfg, "s3://"+wh, lake.S3Options{Endpoint: srv.URL, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fsys.(icebergio.WriteFileIO); !ok {
		t.Fatalf("%T cannot write", fsys)
	}
	lk := lake.New(e.cat, fsys, lake.Options{})
	sc, spec := eventsSchema()
	if _, err := e.cat.CreateTable(t.Context(), wh, ns, catalog.CreateTableRequest{Name: "remote", Schema: sc, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	tbl, err := lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	data := rows(t, tbl, 0, 300)
	defer data.Release()
	got, err := lake.AppendTable(t.Context(), tbl, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Read through the embedded store directly: the files are really there.
	direct, err := e.lk.LoadTable(t.Context(), wh, catalog.Ident{Namespace: ns, Name: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, direct); !slices.Equal(ids, seq(0, 300)) {
		t.Fatalf("scanned %d ids through the store, want 300", len(ids))
	}
	if ids := scanIDs(t, got); !slices.Equal(ids, seq(0, 300)) {
		t.Fatalf("scanned %d ids through S3, want 300", len(ids))
	}
}
