package maint_test

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/testkit/bypass"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// TestMaintenanceSecondWall: a table whose metadata references another
// table's files (committed below the catalog's checks, as metadata from
// before them could) is neither compacted nor has its manifests
// rewritten: both jobs fail before reading a foreign file, with an error
// naming it and the table location, and commit nothing.
func TestMaintenanceSecondWall(t *testing.T) {
	e := newLakeEnv(t)
	ctx := t.Context()
	hrID, hr := e.createTable(t, "hr", "payroll", false, nil)
	for i := range int64(6) {
		hr = appendRows(t, hr, i*10, i*10+10)
	}
	files, err := lake.CurrentDataFiles(ctx, hr)
	if err != nil {
		t.Fatal(err)
	}
	id, own := e.createTable(t, "sandbox", "mine", false, map[string]string{maint.PropMinManifests: "2", maint.PropMinInputFiles: "2"})
	raw := lake.New(bypass.Tables{Cat: e.f.App.Catalog(), Store: e.f.App.Store(), IO: e.f.App.Objects().FileIO()},
		lake.NewBucketFS(e.f.App.Objects()), lake.Options{})
	for _, f := range files {
		mine, err := raw.LoadTable(ctx, e.wh, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lake.AppendFiles(ctx, mine, []iceberg.DataFile{f}, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := e.load(t, id).CurrentSnapshot().SnapshotID
	jobs := []struct {
		name string
		run  func() (maint.Report, error)
	}{
		{"compaction", func() (maint.Report, error) { return maint.NewCompact(e.env).CompactTable(ctx, e.wh, id, false) }},
		{"manifest rewrite", func() (maint.Report, error) { return maint.NewManifests(e.env).RewriteManifests(ctx, e.wh, id, false) }},
	}
	for _, j := range jobs {
		rep, err := j.run()
		if err == nil {
			t.Errorf("%s ran over foreign files: %+v", j.name, rep)
			continue
		}
		// Forbidden is the wall before any foreign file is read; the
		// catalog's Invalid at commit time would mean the job had already
		// read them (and rewritten their rows).
		if k := floe.KindOf(err); k != floe.Forbidden {
			t.Errorf("%s: %v (kind %v), want Forbidden", j.name, err, k)
		}
		if !strings.Contains(err.Error(), "s3://"+e.wh+"/hr/payroll-") || !strings.Contains(err.Error(), own.Location()) {
			t.Errorf("%s: %v, want it to name a foreign file and %s", j.name, err, own.Location())
		}
	}
	if got := e.load(t, id).CurrentSnapshot().SnapshotID; got != before {
		t.Errorf("maintenance committed snapshot %d over foreign files", got)
	}
	// The source table itself is still maintained.
	if rep, err := maint.NewCompact(e.env).CompactTable(ctx, e.wh, hrID, false); err != nil || !rep.Changed {
		t.Errorf("compacting hr.payroll: %+v, %v", rep, err)
	}
}
