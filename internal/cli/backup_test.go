package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// locations through Floe's S3 endpoint
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/internal/testkit/s3double"
	"github.com/floe-lake/floe/store/backup"
)

// backupEntities reads the entities rows of a backup file: table
// "namespace.name" to its metadata location.
func backupEntities(t *testing.T, path string) (backup.Header, map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := backup.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for {
		tb, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tb.Name != "entities" {
			continue
		}
		col := map[string]int{}
		for i, c := range tb.Columns {
			col[c.Name] = i
		}
		for {
			row, err := rd.NextRow()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out[row[col["namespace"]].(string)+"."+row[col["name"]].(string)] = row[col["metadata_location"]].(string)
		}
	}
	return rd.Header(), out
}

var backupRows = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// TestBackupUnderWriteLoad: floe backup of a live server while iceberg-go
// appends to three tables; floe restore into a new store; a new server over
// the restored store and the same warehouse serves every table at the
// backup's metadata pointer, the tables scan, and the audit chain verifies.
func TestBackupUnderWriteLoad(t *testing.T) {
	ctx := context.Background()
	f := testkit.Start(t, func(c *app.Config) { c.Maintenance = false })
	cat, err := rest.NewCatalog(ctx, "floe", f.URL, rest.WithCredential(f.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"load"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	b := array.NewRecordBuilder(memory.DefaultAllocator, backupRows)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4, 5}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(backupRows, []arrow.RecordBatch{rec})
	defer at.Release()
	names := []string{"a", "b", "c"}
	for _, n := range names {
		if _, err := cat.CreateTable(ctx, table.Identifier{"load", n}, sc); err != nil {
			t.Fatal(err)
		}
	}
	const appends = 8
	var wg sync.WaitGroup
	started := make(chan struct{}, len(names))
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				tbl, err := cat.LoadTable(ctx, table.Identifier{"load", n})
				if err != nil {
					t.Errorf("load %s: %v", n, err)
					return
				}
				if _, err := tbl.AppendTable(ctx, at, 10, nil); err != nil {
					t.Errorf("append %s: %v", n, err)
					return
				}
				if i == 1 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range names {
		<-started
	}
	file := filepath.Join(t.TempDir(), "floe.backup")
	// The store of the running server: SQLite in its data directory, or
	// PostgreSQL when FLOE_TEST_STORE names one (then the restore below
	// goes from PostgreSQL to SQLite).
	out, _, err := runCLI(t, "", nil, "backup", "--data-dir", f.Dir, "--store", f.App.Config().Store, "--log-level", "error", "--out", file)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if !strings.Contains(out, "backup written to "+file) {
		t.Fatalf("backup said %q", out)
	}
	wg.Wait()
	h, pointers := backupEntities(t, file)
	if len(pointers) != len(names) {
		t.Fatalf("backup has tables %v", pointers)
	}

	// Restore into a new store in the same data directory (same key file
	// and warehouse), and serve it.
	// Restore into a new SQLite store, and into a new PostgreSQL schema
	// when FLOE_TEST_PG_DSN names a server (SQLite to PostgreSQL under
	// load), and serve each over the same data directory and warehouse.
	targets := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "restored.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
	}
	for _, tg := range targets {
		t.Run("to_"+tg.name, func(t *testing.T) {
			checkRestored(t, f, cat, file, h, pointers, names, appends, tg.dsn(t))
		})
	}
}

// checkRestored restores file into the empty store dsn, serves it over f's
// data directory, and checks every table against the backup's pointers.
func checkRestored(t *testing.T, f *testkit.Floe, cat *rest.Catalog, file string, h backup.Header, pointers map[string]string,
	names []string, appends int, restored string) {
	ctx := context.Background()
	out, errOut, err := runCLI(t, "", nil, "restore", "--data-dir", f.Dir, "--store", restored, "--log-level", "error", "--in", file)
	if err != nil || strings.Contains(errOut, "warning") {
		t.Fatalf("restore: %v %s", err, errOut)
	}
	if want := fmt.Sprintf("head %d %s", h.AuditHead.Seq, h.AuditHead.Hash); !strings.Contains(out, "audit log intact") || !strings.Contains(out, want) {
		t.Fatalf("restore said %q, want %q", out, want)
	}
	// No warehouse checkpoints from this server: the next target is
	// restored from the same backup over the same warehouse, and its
	// restore would retire this server's checkpoints as written after the
	// backup (see TestRestoreRetiresLaterCheckpoints).
	g := testkit.Start(t, func(c *app.Config) {
		c.DataDir, c.Store, c.Maintenance, c.AuditCheckpointInterval = f.Dir, restored, false, 0
	})
	cat2, err := rest.NewCatalog(ctx, "restored", g.URL, rest.WithCredential(g.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, n := range names {
		tbl, err := cat2.LoadTable(ctx, table.Identifier{"load", n})
		if err != nil {
			t.Fatalf("load restored %s: %v", n, err)
		}
		if got, want := tbl.MetadataLocation(), pointers["load."+n]; got != want {
			t.Errorf("table %s: metadata %s, the backup has %s", n, got, want)
		}
		snap := tbl.CurrentSnapshot()
		if snap == nil {
			t.Fatalf("table %s has no snapshot in the backup", n)
		}
		total, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("scan restored %s: %v", n, err)
		}
		if res.NumRows() != total || total < 10 {
			t.Errorf("table %s: %d rows scanned, its snapshot has %d", n, res.NumRows(), total)
		}
		res.Release()
		// The live server went on past the backup's point.
		live, err := cat.LoadTable(ctx, table.Identifier{"load", n})
		if err != nil {
			t.Fatal(err)
		}
		if len(live.Metadata().Snapshots()) != appends {
			t.Errorf("live table %s has %d snapshots", n, len(live.Metadata().Snapshots()))
		}
		if live.MetadataLocation() != tbl.MetadataLocation() {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no table was written after the backup: the backup did not run under load")
	}
	if _, err := g.App.Audit().VerifyChain(ctx); err != nil {
		t.Fatalf("audit chain of the restored store: %v", err)
	}
}

// TestBackupRestoreCommands: the commands' refusals and standard streams.
func TestBackupRestoreCommands(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	if _, _, err := runCLI(t, "", nil, append([]string{"principal", "create", "etl"}, data...)...); err != nil {
		t.Fatal(err)
	}
	// To standard output, and back from standard input.
	out, errOut, err := runCLI(t, "", nil, append([]string{"backup", "--out", "-"}, data...)...)
	if err != nil || !strings.Contains(errOut, "backup written to -") {
		t.Fatalf("backup to stdout: %v %q", err, errOut)
	}
	file := filepath.Join(t.TempDir(), "b")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"from stdin", out, []string{"restore", "--store", other, "--in", "-"}, "audit log intact"},
		{"non-empty store", "", []string{"restore", "--store", other, "--in", file}, "not empty"},
		{"force", "", []string{"restore", "--store", other, "--in", file, "--force"}, "audit log intact"},
		{"the source itself", "", []string{"restore", "--in", file}, "not empty"},
		{"damaged", out[:len(out)/2], []string{"restore", "--store", filepath.Join(t.TempDir(), "x.db"), "--in", "-"}, "invalid backup file"},
		{"no key file", "", []string{"restore", "--store", filepath.Join(t.TempDir(), "y.db"), "--in", file,
			"--data-dir", t.TempDir()}, "key file"},
		{"no out", "", []string{"backup"}, `"out" not set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _, err := runCLI(t, tc.stdin, nil, append(append([]string{}, tc.args[0]), append(data, tc.args[1:]...)...)...)
			msg := stdout
			if err != nil {
				msg += err.Error()
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("%v: %q, want %q", tc.args, msg, tc.want)
			}
		})
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "*.tmp")); len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}

// TestRestoreRetiresLaterCheckpoints: a warehouse checkpoint of the audit
// chain written after the backup seals records the restore rewinds; floe
// restore moves it aside (recording the move in the store.restore event),
// so that the restored log verifies at once and a node started on it seals
// the records that take the lost seqs, with no manual step.
func TestRestoreRetiresLaterCheckpoints(t *testing.T) {
	ctx := context.Background()
	f := testkit.Start(t, func(c *app.Config) { c.Maintenance = false })
	f.CreateTable(t, "ns", "before")
	if _, err := f.App.SealAudit(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b")
	if _, _, err := runCLI(t, "", nil, "backup", "--data-dir", f.Dir, "--log-level", "error", "--out", file); err != nil {
		t.Fatal(err)
	}
	var restored string
	restore := func() (string, string) {
		t.Helper()
		restored = filepath.Join(t.TempDir(), "r.db")
		out, errOut, err := runCLI(t, "", nil, "restore", "--data-dir", f.Dir, "--store", restored,
			"--log-level", "error", "--in", file)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		return out, errOut
	}
	if out, errOut := restore(); strings.Contains(errOut, "warning") || strings.Contains(out, "retired") {
		t.Fatalf("restore before any later checkpoint: %q %q", out, errOut)
	}
	f.CreateTable(t, "ns", "after")
	later, err := f.App.SealAudit(ctx, "n1")
	if err != nil || !later.Written {
		t.Fatalf("seal: %+v %v", later, err)
	}
	h, _ := backupEntities(t, file)
	if later.Seal.Seq <= h.AuditHead.Seq {
		t.Fatalf("the later checkpoint seals %d, the backup's head is %d", later.Seal.Seq, h.AuditHead.Seq)
	}
	out, errOut := restore()
	want := fmt.Sprintf("retired 1 warehouse audit checkpoints of records %d-%d", later.Seal.Seq, later.Seal.Seq)
	if !strings.Contains(out, "audit log intact") || !strings.Contains(out, want) || strings.Contains(errOut, "warning") {
		t.Fatalf("restore said %q %q; want %q and no warning", out, errOut, want)
	}
	wh := f.App.Config().WarehouseDir
	name := fmt.Sprintf("%020d.json", later.Seal.Seq)
	if _, err := os.Stat(filepath.Join(wh, "_floe", "audit", "checkpoints", name)); !os.IsNotExist(err) {
		t.Fatalf("the checkpoint of a lost record is still in the chain: %v", err)
	}
	kept, _ := filepath.Glob(filepath.Join(wh, "_floe", "audit", "checkpoints-retired", "restore-*", name))
	if len(kept) != 1 {
		t.Fatalf("the retired checkpoint is not kept: %v", kept)
	}
	verify := []string{"audit", "verify", "--data-dir", f.Dir, "--store", restored, "--log-level", "error"}
	if out, _, err := runCLI(t, "", nil, verify...); err != nil || !strings.Contains(out, "audit log intact") {
		t.Fatalf("audit verify after the restore: %v %q", err, out)
	}
	// A node on the restored store: its records take the lost seqs, its
	// checkpoint is written (no name collision) and the log verifies.
	g := testkit.Start(t, func(c *app.Config) {
		c.DataDir, c.Store, c.Maintenance, c.AuditCheckpointInterval = f.Dir, restored, false, 0
	})
	g.CreateTable(t, "ns", "after_restore")
	res, err := g.App.SealAudit(ctx, "n2")
	if err != nil || !res.Written || res.Seal.Seq <= h.AuditHead.Seq {
		t.Fatalf("seal after the restore: %+v %v", res, err)
	}
	recs, err := g.App.Store().AuditQuery(ctx, audit.Query{Action: "store.restore", Limit: 10})
	wantDetail := fmt.Sprintf(`"retired_checkpoints":1,"retired_from_seq":%d,`, later.Seal.Seq)
	if err != nil || len(recs) != 1 || !strings.Contains(string(recs[0].Detail), wantDetail) {
		t.Fatalf("the store.restore event: %+v %v", recs, err)
	}
	if _, _, err := g.App.Audit().VerifySeals(ctx, mustSeals(t, g)); err != nil {
		t.Fatalf("verify with the new checkpoint: %v", err)
	}
}

func mustSeals(t *testing.T, f *testkit.Floe) audit.SealObjects {
	t.Helper()
	objs, err := f.App.SealObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestBackupToS3: --out s3://bucket/key uploads the backup (Floe's own S3
// API stands in for S3), --in s3://bucket/key restores it, and a backup
// that fails uploads nothing.
func TestBackupToS3(t *testing.T) {
	dir := t.TempDir()
	_, url := s3double.Start(t, "backups")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	env := map[string]string{"FLOE_S3_ENDPOINT": url, "FLOE_S3_PATH_STYLE": "true"}
	data := []string{"--data-dir", filepath.Join(dir, "data"), "--log-level", "error"}
	if _, _, err := runCLI(t, "", env, append([]string{"principal", "create", "etl"}, data...)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "", env, append([]string{"backup", "--out", "s3://backups/floe/one.backup"}, data...)...)
	if err != nil || !strings.Contains(out, "backup written to s3://backups/floe/one.backup") {
		t.Fatalf("backup to s3: %v %q", err, out)
	}
	out, _, err = runCLI(t, "", env, append([]string{"restore", "--in", "s3://backups/floe/one.backup",
		"--store", filepath.Join(dir, "r.db")}, data...)...)
	if err != nil || !strings.Contains(out, "audit log intact") {
		t.Fatalf("restore from s3: %v %q", err, out)
	}
	for _, tc := range []struct{ flag, loc, want string }{
		{"--in", "s3://backups/floe/missing.backup", "read the backup"},
		{"--in", "s3://backups", "not s3://bucket/key"},
		{"--out", "s3://nobucket/x", "upload the backup"},
	} {
		cmd := "restore"
		if tc.flag == "--out" {
			cmd = "backup"
		}
		_, _, err := runCLI(t, "", env, append([]string{cmd, tc.flag, tc.loc, "--store", filepath.Join(t.TempDir(), "x.db")}, data...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s %s: %v, want %q", tc.flag, tc.loc, err, tc.want)
		}
	}
}
