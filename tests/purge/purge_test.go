// Package purge_test proves that a drop with purge frees every file of the
// dropped table, for Floe-assigned and client-chosen locations, and never
// a file outside the table's location (issue 16, part C).
package purge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
)

const wh = "floe"

// node is one Floe process over a data directory.
type node struct {
	a  *app.App
	lk *lake.Lake
}

// config is the configuration of every node of a test over dir.
func config(dir string, opts ...func(*app.Config)) app.Config {
	cfg := app.Defaults()
	cfg.DataDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.S3Listen = "off"
	cfg.SQLListen = "off"
	cfg.AdminListen = "off"
	cfg.Maintenance = false
	cfg.AuditExportInterval = 0
	cfg.BootstrapCredential = "purge:purge-secret"
	if dsn := os.Getenv("FLOE_TEST_STORE"); dsn != "" {
		cfg.Store = dsn
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

func open(t *testing.T, cfg app.Config) *node {
	t.Helper()
	a, err := app.Open(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open floe: %v", err)
	}
	if err := a.Start(); err != nil {
		t.Fatalf("start floe: %v", err)
	}
	n := &node{a: a, lk: lake.New(a.Catalog(), lake.NewBucketFS(a.Objects()), lake.Options{})}
	t.Cleanup(func() { n.close(t) })
	return n
}

func (n *node) close(t *testing.T) {
	t.Helper()
	if n.a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.a.Close(ctx); err != nil {
		t.Errorf("close floe: %v", err)
	}
	n.a = nil
}

// admin is a context acting as an administrator.
func admin(t *testing.T) context.Context {
	return catalog.WithClaimant(t.Context(), catalog.Claimant{Principal: "admin", Admin: true, CanRead: true})
}

func schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "who", Type: iceberg.PrimitiveTypes.String},
	)
}

// create makes ns.name at loc ("" for the location Floe assigns),
// partitioned by who (7 values, so each append writes 7 data files), and
// appends `snapshots` batches of rows, then deletes some rows (so that the
// table has delete or rewritten files too); it returns the table location.
func (n *node) create(t *testing.T, ns, name, loc string, snapshots int) string {
	t.Helper()
	ctx := admin(t)
	cat := n.a.Catalog()
	nsp := catalog.Namespace{ns}
	if _, err := cat.NamespaceProperties(ctx, wh, nsp); err != nil {
		if err := cat.CreateNamespace(ctx, wh, nsp, nil); err != nil {
			t.Fatal(err)
		}
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "who"})
	st, err := cat.CreateTable(ctx, wh, nsp, catalog.CreateTableRequest{Name: name, Schema: schema(), Location: loc, Spec: &spec})
	if err != nil {
		t.Fatalf("create %s.%s at %q: %v", ns, name, loc, err)
	}
	id := catalog.Ident{Namespace: nsp, Name: name}
	for i := range snapshots {
		tbl, err := n.lk.LoadTable(ctx, wh, id)
		if err != nil {
			t.Fatal(err)
		}
		data := rows(t, tbl, int64(i*10), int64(i*10+10))
		_, err = lake.AppendTable(ctx, tbl, data, nil)
		data.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if snapshots > 1 {
		tbl, err := n.lk.LoadTable(ctx, wh, id)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(5)), nil); err != nil {
			t.Fatalf("delete rows: %v", err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatalf("commit delete: %v", err)
		}
	}
	return st.Metadata.Location()
}

func rows(t testing.TB, tbl *table.Table, from, to int64) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("p" + strings.Repeat("x", int(i%7)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// localDir is the directory of a location of the embedded warehouse.
func (n *node) localDir(loc string) string {
	key := strings.TrimPrefix(loc, "s3://"+wh+"/")
	return filepath.Join(n.a.Config().WarehouseDir, filepath.FromSlash(key))
}

// files lists the regular files under dir (none when it is missing).
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// waitEmpty polls (bounded) until dir holds no file.
func waitEmpty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := files(t, dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files left under %s after the purge, e.g. %s", len(left), dir, left[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// write puts a stray file at path (outside any table's files).
func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPurgeFreesEveryFile: a drop with purge deletes every file of the
// table (data, delete, manifests, manifest lists, metadata), whether Floe
// or the client chose the location; a neighbour table in the same parent
// directory, a sibling whose name extends the table's directory name and
// a stray file next to it all stay, and the neighbour still reads.
func TestPurgeFreesEveryFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		loc  string // "" Floe assigns it
	}{
		{"floe assigned", ""},
		{"client chosen", "s3://floe/lake/custom/events"},
		{"client chosen deeper", "s3://floe/lake/custom/deep/er/events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := open(t, config(t.TempDir()))
			loc := n.create(t, "lake", "events", tc.loc, 4)
			parent := loc[:strings.LastIndex(loc, "/")]
			neighbour := n.create(t, "lake", "neighbour", parent+"/neighbour", 2)
			dir := n.localDir(loc)
			if got := files(t, dir); len(got) < 10 {
				t.Fatalf("table has only %d files: %v", len(got), got)
			}
			sibling := dir + "-sibling/file.parquet"
			stray := filepath.Join(filepath.Dir(dir), "stray.txt")
			write(t, sibling)
			write(t, stray)
			keep := files(t, n.localDir(neighbour))

			id := catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}
			if err := n.a.Catalog().DropTable(admin(t), wh, id, true); err != nil {
				t.Fatal(err)
			}
			waitEmpty(t, dir)
			sameFiles(t, files(t, n.localDir(neighbour)), keep)
			for _, p := range []string{sibling, stray} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("a file outside the table location went: %v", err)
				}
			}
			tbl, err := n.lk.LoadTable(admin(t), wh, catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "neighbour"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tbl.Scan().ToArrowTable(t.Context())
			if err != nil {
				t.Fatalf("the neighbour does not read: %v", err)
			}
			defer got.Release()
			if got.NumRows() != 15 {
				t.Errorf("neighbour has %d rows, want 15", got.NumRows())
			}
		})
	}
}

// localFile maps a file location of the embedded warehouse to its path.
func (n *node) localFile(loc string) string { return n.localDir(loc) }

// errCrash stops a purge run as a dying node would.
var errCrash = errors.New("simulated crash")

// TestPurgeResumesAfterCrash: a purge stopped after some deletions (the
// node then shut down) leaves a durable job; a node opened on the same
// store finishes it: every file of the table goes, the neighbour in the
// same parent directory and a stray file stay, the job and the
// tombstone are gone.
func TestPurgeResumesAfterCrash(t *testing.T) {
	dir := t.TempDir()
	var deleted atomic.Int64
	var crashing atomic.Bool
	crashing.Store(true)
	crashCfg := config(dir, func(c *app.Config) {
		c.Purge.Batch = 3
		c.PurgeHook = func(ctx context.Context, file string) error {
			if crashing.Load() && deleted.Add(1) > 7 {
				return errCrash
			}
			return ctx.Err()
		}
	})
	n := open(t, crashCfg)
	loc := n.create(t, "lake", "events", "s3://floe/lake/custom/events", 5)
	neighbour := n.create(t, "lake", "neighbour", "s3://floe/lake/custom/neighbour", 2)
	stray := filepath.Join(n.localDir("s3://floe/lake/custom"), "stray.txt")
	write(t, stray)
	keep := files(t, n.localDir(neighbour))
	before := files(t, n.localDir(loc))

	id := catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}
	if err := n.a.Catalog().DropTable(admin(t), wh, id, true); err != nil {
		t.Fatal(err)
	}
	left := files(t, n.localDir(loc))
	if len(left) == 0 || len(left) >= len(before) {
		t.Fatalf("the stopped purge left %d of %d files; want some deleted and some left", len(left), len(before))
	}
	jobs, err := n.a.Catalog().PurgeJobs(admin(t), wh, 0)
	if err != nil || len(jobs) != 1 || jobs[0].Location != loc || jobs[0].Ident.String() != id.String() {
		t.Fatalf("pending purge jobs = %+v, %v; want the one of %s", jobs, err, loc)
	}
	n.close(t)

	crashing.Store(false)
	n = open(t, config(dir))
	waitEmpty(t, n.localDir(loc))
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, err := n.a.Catalog().PurgeJobs(admin(t), wh, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("purge job still pending: %+v", jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tombs, err := n.a.Catalog().Tombstones(admin(t), wh); err != nil || len(tombs) != 0 {
		t.Errorf("tombstones after the purge: %+v %v", tombs, err)
	}
	sameFiles(t, files(t, n.localDir(neighbour)), keep)
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("a file outside the table location went: %v", err)
	}
	// The location is free again once the purge is done.
	n.create(t, "lake", "again", loc, 1)
}

// TestPurgeHoldsTheLocation: while a purge is pending nobody, not even an
// administrator, may create or register a table at, inside or above the
// location being purged (the purge would delete its files).
func TestPurgeHoldsTheLocation(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	defer stop()
	n := open(t, config(t.TempDir(), func(c *app.Config) {
		c.PurgeHook = func(ctx context.Context, file string) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.Purge.InlineFiles = 0 // all in the background, stalled by the hook
	}))
	loc := n.create(t, "lake", "events", "s3://floe/lake/custom/events", 2)
	id := catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}
	if err := n.a.Catalog().DropTable(admin(t), wh, id, true); err != nil {
		t.Fatal(err)
	}
	for i, at := range []string{loc, loc + "/data", "s3://floe/lake/custom"} {
		_, err := n.a.Catalog().CreateTable(admin(t), wh, catalog.Namespace{"lake"},
			catalog.CreateTableRequest{Name: fmt.Sprintf("squatter%d", i), Schema: schema(), Location: at})
		if err == nil || !strings.Contains(err.Error(), "being deleted") {
			t.Errorf("create at %s during the purge: %v; want a refusal", at, err)
		}
	}
	stop()
	waitEmpty(t, n.localDir(loc))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := n.a.Catalog().CreateTable(admin(t), wh, catalog.Namespace{"lake"},
			catalog.CreateTableRequest{Name: "squatter", Schema: schema(), Location: loc})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create after the purge: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPurgeInlineBudget: a drop deletes at most purge.inline_files files
// before it answers; the worker deletes the rest.
func TestPurgeInlineBudget(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	defer stop()
	var calls atomic.Int64
	n := open(t, config(t.TempDir(), func(c *app.Config) {
		c.Purge.InlineFiles = 3
		c.PurgeHook = func(ctx context.Context, file string) error {
			if calls.Add(1) > 3 {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
	}))
	loc := n.create(t, "lake", "events", "", 4)
	id := catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}
	done := make(chan error, 1)
	go func() { done <- n.a.Catalog().DropTable(admin(t), wh, id, true) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drop waited for more than purge.inline_files deletions")
	}
	if left := files(t, n.localDir(loc)); len(left) == 0 {
		t.Fatal("the drop deleted every file despite its budget")
	}
	stop()
	waitEmpty(t, n.localDir(loc))
}

// TestPurgeBatchBound: a purge never holds more than purge.batch files
// queued for deletion (its memory does not grow with the table).
func TestPurgeBatchBound(t *testing.T) {
	const batch = 4
	var mu sync.Mutex
	var pending []string
	worst := 0
	var n *node
	n = open(t, config(t.TempDir(), func(c *app.Config) {
		c.Purge.Batch = batch
		c.PurgeHook = func(ctx context.Context, file string) error {
			mu.Lock()
			defer mu.Unlock()
			still := pending[:0]
			for _, p := range pending {
				if _, err := os.Stat(p); err == nil {
					still = append(still, p)
				}
			}
			pending = append(still, n.localFile(file))
			worst = max(worst, len(pending))
			return nil
		}
	}))
	loc := n.create(t, "lake", "events", "s3://floe/lake/custom/events", 8)
	if err := n.a.Catalog().DropTable(admin(t), wh, catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}, true); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, n.localDir(loc))
	mu.Lock()
	defer mu.Unlock()
	if worst != batch {
		t.Errorf("at most %d files were queued at once; want exactly the batch bound %d", worst, batch)
	}
}

// TestPurgeNeverLeavesTheLocation: a table whose metadata (tampered with
// in storage) names files of another table, as statistics and in its
// metadata log, is purged without touching them.
func TestPurgeNeverLeavesTheLocation(t *testing.T) {
	n := open(t, config(t.TempDir(), func(c *app.Config) { c.Encryption = false }))
	loc := n.create(t, "lake", "events", "s3://floe/lake/custom/events", 2)
	neighbour := n.create(t, "lake", "neighbour", "s3://floe/lake/custom/neighbour", 2)
	keep := files(t, n.localDir(neighbour))
	ctx := admin(t)
	nb, err := n.a.Catalog().LoadTable(ctx, wh, catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "neighbour"})
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, f := range keep {
		if strings.HasSuffix(f, ".parquet") {
			victim = "s3://floe/" + filepath.ToSlash(strings.TrimPrefix(f, n.a.Config().WarehouseDir+"/"))
		}
	}
	if victim == "" {
		t.Fatal("the neighbour has no data file")
	}
	id := catalog.Ident{Namespace: catalog.Namespace{"lake"}, Name: "events"}
	st, err := n.a.Catalog().LoadTable(ctx, wh, id)
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	if err := json.Unmarshal(st.JSON, &md); err != nil {
		t.Fatal(err)
	}
	md["statistics"] = []any{map[string]any{"snapshot-id": md["current-snapshot-id"], "statistics-path": victim,
		"file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []any{}}}
	mlog := md["metadata-log"].([]any)
	last := mlog[len(mlog)-1].(map[string]any)["timestamp-ms"]
	md["metadata-log"] = append(mlog, map[string]any{"metadata-file": nb.Location, "timestamp-ms": last})
	raw, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.localFile(st.Location), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.a.Catalog().DropTable(ctx, wh, id, true); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, n.localDir(loc))
	sameFiles(t, files(t, n.localDir(neighbour)), keep)
}

// sameFiles fails the test with the files of want missing from got (or
// added to it).
func sameFiles(t *testing.T, got, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("the neighbour lost %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the neighbour has %d files, want %d", len(got), len(want))
	}
}
