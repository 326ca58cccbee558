package maint_test

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/objstore"
)

// TestLifecycle: files only old snapshots reference move to the cold tier;
// the current files stay; time travel through the lake, a plain S3 GET
// with vended credentials and a second run all still work.
func TestLifecycle(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	objs := e.f.App.Objects()
	if objs.ColdDir(e.wh) == "" {
		t.Fatal("the default configuration has no cold tier")
	}
	id, tbl := e.createTable(t, "life", "events", false, map[string]string{maint.PropColdAfter: "1h", maint.PropMinInputFiles: "2"})
	tbl = appendRows(t, tbl, 0, 10)
	tbl = appendRows(t, tbl, 10, 20)
	s2 := tbl.CurrentSnapshot().SnapshotID
	oldFiles := slices.Sorted(func(yield func(string) bool) {
		for p := range dataFiles(t, tbl) {
			if !yield(p) {
				return
			}
		}
	})
	if len(oldFiles) != 2 {
		t.Fatalf("%d data files after two appends", len(oldFiles))
	}
	if rep, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false); err != nil || !rep.Changed {
		t.Fatalf("compaction: %+v, %v", rep, err)
	}
	tbl = e.load(t, id)
	current := dataFiles(t, tbl)
	want := readContent(t, tbl)

	now := time.Now()
	e.env.Now = func() time.Time { return now }
	job := maint.NewLifecycle(e.env, objs)

	// Within cold-after nothing moves.
	rep, err := job.TierTable(ctx, e.wh, id, false)
	if err != nil || rep.Stats["cold_files"] != 0 || rep.Changed {
		t.Fatalf("young snapshots: %+v, %v", rep, err)
	}
	now = now.Add(2 * time.Hour)
	rep, err = job.TierTable(ctx, e.wh, id, true)
	if err != nil || rep.Stats["cold_files"] != 2 || rep.Changed || !rep.DryRun {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	for _, p := range oldFiles {
		if cold, _ := isCold(t, e, p); cold {
			t.Fatalf("the dry run moved %s", p)
		}
	}
	rep, err = job.TierTable(ctx, e.wh, id, false)
	if err != nil || rep.Stats["cold_files"] != 2 || !rep.Changed || !slices.Equal(slices.Sorted(slices.Values(rep.Files)), oldFiles) {
		t.Fatalf("lifecycle: %+v, %v", rep, err)
	}
	for _, p := range oldFiles {
		if cold, hot := isCold(t, e, p); !cold || hot {
			t.Fatalf("%s: cold %v, still in the warehouse %v", p, cold, hot)
		}
	}
	for p := range current {
		if cold, _ := isCold(t, e, p); cold {
			t.Fatalf("a current file moved: %s", p)
		}
	}

	// Readers: the current table, time travel to the old snapshot.
	if got := readContent(t, e.load(t, id)); got.hash != want.hash {
		t.Fatal("the current content changed")
	}
	old, err := e.load(t, id).Scan(table.WithSnapshotID(s2)).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("time travel to the tiered snapshot: %v", err)
	}
	if old.NumRows() != 20 {
		t.Fatalf("time travel read %d rows, want 20", old.NumRows())
	}
	old.Release()

	// A plain S3 GET of a cold file with the credentials Floe vends.
	load := e.f.Do(t, "GET", e.f.P("/namespaces/life/tables/events"), nil)
	if load.Status != 200 {
		t.Fatalf("load: %d %s", load.Status, load.Body)
	}
	var lt testkit.Table
	load.JSON(t, &lt)
	c := lt.Config
	cli := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	_, key, _ := objstore.ParseLocation(oldFiles[0])
	out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(e.wh), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("S3 GET of a cold file: %v", err)
	}
	body, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || len(body) < 8 || string(body[:4]) != "PAR1" || string(body[len(body)-4:]) != "PAR1" {
		t.Fatalf("S3 GET of a cold file: %d bytes, %v", len(body), err)
	}
	lst, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(e.wh), Prefix: aws.String(key)})
	if err != nil || len(lst.Contents) != 1 {
		t.Fatalf("S3 LIST of a cold file: %+v, %v", lst, err)
	}

	// A second run finds them cold already.
	rep, err = job.TierTable(ctx, e.wh, id, false)
	if err != nil || rep.Stats["cold_files"] != 0 || rep.Stats["already_cold_files"] != 2 || rep.Changed {
		t.Fatalf("second run: %+v, %v", rep, err)
	}

	// Off by default, and "off" turns it off again.
	off, _ := e.createTable(t, "life", "plain", false, nil)
	if rep, err := job.TierTable(ctx, e.wh, off, false); err != nil || !strings.Contains(rep.Summary, "off") {
		t.Fatalf("default policy: %+v, %v", rep, err)
	}
	if due, err := job.Due(ctx, maint.TableRef{Warehouse: e.wh, Ident: off, Tick: 1}); err != nil || due {
		t.Fatalf("Due on a table without cold-after: %v, %v", due, err)
	}
	if due, err := job.Due(ctx, maint.TableRef{Warehouse: e.wh, Ident: id, Tick: 1}); err != nil || !due {
		t.Fatalf("Due on a table with cold-after: %v, %v", due, err)
	}
	if p := maint.DefaultPolicy(maint.Retention{}).Apply(map[string]string{maint.PropColdAfter: "30d"}).Apply(
		map[string]string{maint.PropColdAfter: "off"}); p.ColdAfter != 0 {
		t.Fatalf("cold-after off: %v", p.ColdAfter)
	}
	if rep, err := maint.NewLifecycle(e.env, nil).TierTable(ctx, e.wh, id, false); err != nil || !strings.Contains(rep.Summary, "S3 lifecycle") {
		t.Fatalf("without a cold store: %+v, %v", rep, err)
	}

	// Orphan removal after expiry sees cold files too (listing covers both
	// tiers) and removes them from the cold tier.
	if err := expireAllBut(t, e, id); err != nil {
		t.Fatal(err)
	}
	orphans := maint.NewOrphans(e.env, nil)
	now = now.Add(100 * 24 * time.Hour)
	for _, p := range oldFiles {
		_, key, _ := objstore.ParseLocation(p)
		agePath(t, objs.ColdDir(e.wh)+"/"+key, 100*24*time.Hour)
	}
	orep, err := orphans.RemoveOrphans(ctx, e.wh, id, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range oldFiles {
		if !slices.Contains(orep.Files, p) {
			t.Fatalf("orphan removal missed the cold file %s: %+v", p, orep)
		}
		if cold, hot := isCold(t, e, p); cold || hot {
			t.Fatalf("%s still exists after orphan removal", p)
		}
	}
	if got := readContent(t, e.load(t, id)); got.hash != want.hash {
		t.Fatal("the content changed after orphan removal")
	}
}

// isCold reports whether the file at loc is in the cold tier and whether
// it is (still) in the warehouse directory.
func isCold(t *testing.T, e *lakeEnv, loc string) (cold, hot bool) {
	t.Helper()
	b, key, err := objstore.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.f.App.Objects().IsCold(b, key)
	if err != nil {
		t.Fatal(err)
	}
	_, herr := os.Stat(e.f.App.Objects().Root(b) + "/" + key)
	return c, herr == nil
}

// expireAllBut expires every snapshot but the current one.
func expireAllBut(t *testing.T, e *lakeEnv, id catalog.Ident) error {
	t.Helper()
	exp := maint.NewExpireSnapshots(e.f.App.Catalog(), maint.ExpireOptions{
		Retention: maint.Retention{MaxAge: time.Nanosecond, MinKeep: 1}, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	_, err := exp.ExpireTable(t.Context(), e.wh, id, false)
	return err
}

// agePath sets a file's modification time back by d.
func agePath(t *testing.T, p string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycleSQL: the SQL endpoint reads unencrypted files by path; after
// a rollback to a snapshot whose files are cold, it finds them in the cold
// tier.
func TestLifecycleSQL(t *testing.T) {
	e := newLakeEnv(t, func(c *app.Config) { c.Encryption = false })
	ctx := t.Context()
	id, tbl := e.createTable(t, "lsql", "events", false, map[string]string{maint.PropColdAfter: "1h", maint.PropMinInputFiles: "2"})
	tbl = appendRows(t, tbl, 0, 10)
	tbl = appendRows(t, tbl, 10, 20)
	s2 := tbl.CurrentSnapshot().SnapshotID
	if rep, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false); err != nil || !rep.Changed {
		t.Fatalf("compaction: %+v, %v", rep, err)
	}
	e.env.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	rep, err := maint.NewLifecycle(e.env, e.f.App.Objects()).TierTable(ctx, e.wh, id, false)
	if err != nil || rep.Stats["cold_files"] != 2 {
		t.Fatalf("lifecycle: %+v, %v", rep, err)
	}
	txn := e.load(t, id).NewTransaction()
	if err := txn.RollbackToSnapshot(s2); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for p := range dataFiles(t, e.load(t, id)) {
		if cold, hot := isCold(t, e, p); !cold || hot {
			t.Fatalf("after the rollback %s: cold %v, hot %v", p, cold, hot)
		}
	}
	r := e.f.Do(t, "POST", "/api/v1/query", map[string]any{"sql": "SELECT count(*) AS n, sum(id) AS s FROM lsql.events"})
	if r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"n":20,"s":"190"}` {
		t.Fatalf("query: %d %s", r.Status, r.Body)
	}
}
