// Package purge_test proves that a drop with purge frees every file of the
// dropped table, for Floe-assigned and client-chosen locations, and never
// a file outside the table's location (issue 16, part C).
package purge_test

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// create makes ns.name at loc ("" for the location Floe assigns) and
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
	st, err := cat.CreateTable(ctx, wh, nsp, catalog.CreateTableRequest{Name: name, Schema: schema(), Location: loc})
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
			if got := files(t, n.localDir(neighbour)); !slices.Equal(got, keep) {
				t.Errorf("the neighbour's files changed:\n got %v\nwant %v", got, keep)
			}
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
