package cli

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
)

// appendSmallFiles creates ns.name in f and commits n one-row appends.
func appendSmallFiles(t *testing.T, f *testkit.Floe, ns, name string, n int) {
	t.Helper()
	ctx := t.Context()
	cat := f.App.Catalog()
	if err := cat.CreateNamespace(ctx, f.Warehouse, catalog.Namespace{ns}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(ctx, f.Warehouse, catalog.Namespace{ns}, catalog.CreateTableRequest{Name: name, Schema: sc}); err != nil {
		t.Fatal(err)
	}
	lk := lake.New(cat, lake.NewBucketFS(f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(ctx, f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		rec := b.NewRecordBatch()
		b.Release()
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		rec.Release()
		tbl, err = lake.AppendTable(ctx, tbl, at, nil)
		at.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMaintainAndShow: floe maintain compacts a table of small files
// through a running server (--url) and floe table show reports the result
// and the run; in process (--data-dir) a dry run changes nothing.
func TestMaintainAndShow(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.Maintenance = false })
	appendSmallFiles(t, f, "cli", "events", 6)
	remote := []string{"--url", f.URL, "--credential", f.Cred.String(), "--warehouse", f.Warehouse}

	out, err := run(t, append([]string{"maintain", "cli.events", "--compact", "--dry-run"}, remote...)...)
	if err != nil || !strings.Contains(out, "compact:") || !strings.Contains(out, "would rewrite 6 of 6 data files") {
		t.Fatalf("dry run: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"maintain", "cli.events", "--compact"}, remote...)...)
	if err != nil || !strings.Contains(out, "rewrote 6 data files") {
		t.Fatalf("maintain: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"table", "show", "cli.events"}, remote...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 data files (6 records", "(unpartitioned)", "replace", "Policy: compaction on",
		"compact", "(on demand)", "rewrote 6 data files"} {
		if !strings.Contains(out, want) {
			t.Errorf("table show lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, append([]string{"maintain", "cli.nosuch"}, remote...)...)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing table: %q, %v", out, err)
	}
	// In process, over the same data directory.
	local := []string{"--data-dir", f.Dir, "--warehouse", f.Warehouse, "--log-level", "error"}
	out, err = run(t, append([]string{"maintain", "cli.events", "--dry-run"}, local...)...)
	if err != nil || !strings.Contains(out, "nothing to compact: 1 data files") || !strings.Contains(out, "remove-orphans:") {
		t.Fatalf("in-process dry run: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"table", "show", "cli.events", "--json"}, local...)...)
	if err != nil || !strings.Contains(out, `"data_files": 1`) {
		t.Fatalf("in-process show: %q, %v", out, err)
	}
	if _, err := run(t, "maintain", "events"); err == nil {
		t.Error("a table name without a namespace was accepted")
	}
}
