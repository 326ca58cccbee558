package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
)

// filesOf returns the sorted data file paths of tasks, each with its row
// lineage constants and delete files.
func filesOf(tasks []table.FileScanTask) []string {
	var out []string
	for _, t := range tasks {
		s := t.File.FilePath()
		if t.FirstRowID != nil {
			s += fmt.Sprintf(" row %d", *t.FirstRowID)
		}
		if t.DataSequenceNumber != nil {
			s += fmt.Sprintf(" seq %d", *t.DataSequenceNumber)
		}
		for _, d := range t.DeletionVectorFiles {
			s += " dv" + d.FilePath()
		}
		for _, d := range t.DeleteFiles {
			s += " -" + d.FilePath()
		}
		for _, d := range t.EqualityDeleteFiles {
			s += " =" + d.FilePath()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestAppendPlanMatchesFullPlan: a table appended to a row at a time (a
// stream) is planned from its parent snapshot's plan, reading only the new
// manifest, and every such plan holds exactly the files iceberg-go's full
// planner finds; a snapshot that deletes or rewrites is planned in full.
// Before, every query's plan read every manifest of the table again, most
// of the SQL endpoint's allocation in the 10-minute soak.
func TestAppendPlanMatchesFullPlan(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) { testAppendPlan(t, version) })
	}
}

func testAppendPlan(t *testing.T, version string) {
	e := newEnv(t)
	ctx := context.Background()
	tbl := e.createPeopleWith(t, "crm", "stream", map[string]string{"format-version": version, "write.delete.mode": "merge-on-read"})
	eng := e.f.App.SQLEngine()
	c := e.admin(t)
	full0, app0 := eng.PlanStats()
	const appends = 25
	for i := range appends {
		tbl = appendPeople(t, tbl, person{id: int64(i), name: fmt.Sprintf("p%d", i), region: "eu"})
		if got := mustRows(t, c, "SELECT count(*) FROM crm.stream"); fmt.Sprint(got[0][0]) != fmt.Sprint(i+1) {
			t.Fatalf("after %d appends: count %v", i+1, got[0][0])
		}
	}
	full, app := eng.PlanStats()
	if full-full0 > 1 || app-app0 < appends-1 {
		t.Fatalf("%d appends planned %d times in full and %d from the parent's plan; want at most 1 in full", appends, full-full0, app-app0)
	}
	// Every plan equals iceberg-go's full plan of the same snapshot.
	check := func(tbl *table.Table) {
		t.Helper()
		for _, s := range tbl.Metadata().Snapshots() {
			got, err := eng.PlanForTest(ctx, tbl, s.SnapshotID)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tbl.Scan(table.WithSnapshotID(s.SnapshotID)).PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range got {
				if version == "3" && task.FirstRowID == nil {
					t.Fatalf("snapshot %d: v3 task of %s has no first row id", s.SnapshotID, task.File.FilePath())
				}
			}
			if g, w := filesOf(got), filesOf(want); !slices.Equal(g, w) {
				t.Fatalf("snapshot %d (%s): plan %v, full plan %v", s.SnapshotID, s.Summary.Operation, g, w)
			}
		}
	}
	check(tbl)

	// A DELETE writes delete files (or rewrites files): the next snapshot
	// is planned in full, and so are appends after it (delete manifests).
	if tag := execTag(t, c, "DELETE FROM crm.stream WHERE id < 5"); tag != "DELETE 5" {
		t.Fatalf("DELETE: %s", tag)
	}
	full1, _ := eng.PlanStats()
	if got := mustRows(t, c, "SELECT count(*) FROM crm.stream"); fmt.Sprint(got[0][0]) != fmt.Sprint(appends-5) {
		t.Fatalf("after the DELETE: count %v", got[0][0])
	}
	if full2, _ := eng.PlanStats(); full2 != full1+1 {
		t.Fatalf("the snapshot after a DELETE was not planned in full (%d full plans, %d before)", full2, full1)
	}
	tbl, err := e.lk.LoadTable(ctx, e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tbl = appendPeople(t, tbl, person{id: int64(100 + i), name: "late", region: "us"})
		if got := mustRows(t, c, "SELECT count(*) FROM crm.stream"); fmt.Sprint(got[0][0]) != fmt.Sprint(appends-5+i+1) {
			t.Fatalf("append %d after the DELETE: count %v", i, got[0][0])
		}
	}
	check(tbl)
}

// BenchmarkPlanStream plans the newest snapshot of a table appended to 300
// times, a row at a time: "full" is iceberg-go's planner (every manifest
// read), "from-parent" the plan the SQL endpoint makes from the parent's
// cached plan (only the new manifest read).
func BenchmarkPlanStream(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	tbl := e.createPeople(b, "crm", "stream")
	for i := range 300 {
		tbl = appendPeople(b, tbl, person{id: int64(i), name: "p", region: "eu"})
	}
	eng := e.f.App.SQLEngine()
	last := tbl.CurrentSnapshot()
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if _, err := tbl.Scan(table.WithSnapshotID(last.SnapshotID)).PlanFiles(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from-parent", func(b *testing.B) {
		if _, err := eng.PlanForTest(ctx, tbl, *last.ParentSnapshotID); err != nil {
			b.Fatal(err)
		}
		_, app0 := eng.PlanStats()
		for b.Loop() {
			eng.ForgetPlanForTest(tbl, last.SnapshotID)
			if _, err := eng.PlanForTest(ctx, tbl, last.SnapshotID); err != nil {
				b.Fatal(err)
			}
		}
		if _, app := eng.PlanStats(); app == app0 {
			b.Fatal("no plan was made from the parent's")
		}
	})
}
