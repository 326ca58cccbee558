package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/lake"
)

// checkLineage checks the v3 row lineage invariants of tbl's current
// snapshot: every live data file has a first_row_id, the ranges of row ids
// of the files do not overlap, and they lie below the table's next-row-id.
func checkLineage(t *testing.T, tbl *table.Table) {
	t.Helper()
	files, err := lake.CurrentDataFiles(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	next := tbl.Metadata().NextRowID()
	var ranges [][2]int64
	for _, f := range files {
		id := f.FirstRowID()
		if id == nil {
			t.Fatalf("data file %s has no first_row_id", f.FilePath())
		}
		ranges = append(ranges, [2]int64{*id, *id + f.Count()})
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for i, r := range ranges {
		if r[1] > next {
			t.Errorf("rows [%d, %d) reach past next-row-id %d", r[0], r[1], next)
		}
		if i > 0 && r[0] < ranges[i-1][1] {
			t.Errorf("row id ranges overlap: %v and %v", ranges[i-1], r)
		}
	}
}

// dvDelete deletes the rows matching filter from tbl with iceberg-go's
// merge-on-read delete, which writes deletion vectors on a v3 table (as
// Spark does), and returns the table as committed.
func dvDelete(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) *table.Table {
	t.Helper()
	txn := tbl.NewTransaction()
	if err := txn.Delete(t.Context(), filter, nil); err != nil {
		t.Fatal(err)
	}
	out, err := txn.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// liveDVs counts the deletion vectors of tbl's current snapshot.
func liveDVs(t *testing.T, tbl *table.Table) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		n += len(task.DeletionVectorFiles)
	}
	return n
}

// TestReadDeletionVectors: the SQL endpoint reads a v3 table whose rows
// were deleted with deletion vectors (it answered "the table has deletion
// vectors, which the SQL endpoint does not read yet" before): the same rows
// as iceberg-go, with row filters and column restrictions still applied,
// and SQL DML on such a table keeps the deleted rows deleted.
func TestReadDeletionVectors(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			name := fmt.Sprintf("dv_%v", partitioned)
			qn := "crm." + name
			tbl := e.createPeopleTableV(t, "crm", name, partitioned, 3)
			txn := tbl.NewTransaction()
			if err := txn.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
				t.Fatal(err)
			}
			tbl, err := txn.Commit(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			all := people(30)
			tbl = appendPeople(t, tbl, all...)
			ref := refOf(all)
			tbl = dvDelete(t, tbl, iceberg.NewOr(iceberg.EqualTo(iceberg.Reference("id"), int64(3)), iceberg.EqualTo(iceberg.Reference("id"), int64(4))))
			delete(ref, 3)
			delete(ref, 4)
			// A second delete on the same files merges into their vectors.
			tbl = dvDelete(t, tbl, iceberg.GreaterThan(iceberg.Reference("id"), int64(26)))
			for id := int64(27); id <= 30; id++ {
				delete(ref, id)
			}
			if liveDVs(t, tbl) == 0 {
				t.Fatal("iceberg-go wrote no deletion vector; the test proves nothing")
			}
			check := func(what string) {
				t.Helper()
				sameRows(t, what+" (iceberg-go)", icebergRows(t, e.loadTable(t, "crm", name)), ref.rows())
				sameRows(t, what+" (SQL)", mustRows(t, c, fmt.Sprintf(selectPeople, qn)), ref.rows())
			}
			check("deleted by deletion vectors")
			if got := mustRows(t, c, "SELECT count(*) FROM "+qn+" WHERE id BETWEEN 1 AND 5"); fmt.Sprint(got) != "[[3]]" {
				t.Fatalf("count of ids 1..5 = %v, want 3", got)
			}

			// A row filter and an excluded column apply on top of the
			// deletion vectors.
			principal := "dvreader_" + name
			e.f.NewPrincipal(t, principal)
			e.grant(t, principal, authz.Select, "crm", name, &authz.DataFilter{RowFilter: "region = 'us'", ExcludeColumns: []string{"ssn"}})
			p, err := e.f.App.Store().PrincipalByName(t.Context(), principal)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := e.f.App.Auth().Issue(t.Context(), p, []string{"catalog"})
			if err != nil {
				t.Fatal(err)
			}
			rc := e.connect(t, principal, tok.AccessToken)
			var want [][]any
			for _, r := range ref.rows() {
				if r[2] == "us" {
					want = append(want, []any{r[0], r[1]})
				}
			}
			sameRows(t, "filtered reader", mustRows(t, rc, "SELECT id, name FROM "+qn+" ORDER BY id"), want)
			if _, err := queryRows(t, rc, "SELECT ssn FROM "+qn); err == nil {
				t.Fatal("the excluded column was readable")
			}

			// SQL DML over files with deletion vectors.
			execTag(t, c, "UPDATE "+qn+" SET name = 'updated' WHERE id IN (2, 5)")
			for _, id := range []int64{2, 5} {
				r := ref[id]
				r[1] = "updated"
				ref[id] = r
			}
			check("update")
			if tag := execTag(t, c, "DELETE FROM "+qn+" WHERE id IN (3, 6)"); tag != "DELETE 1" {
				t.Fatalf("delete of one live and one deleted row: tag %q", tag)
			}
			delete(ref, 6)
			check("delete")
			after := e.loadTable(t, "crm", name)
			checkLineage(t, after)
			if d := danglingDVs(t, after); len(d) > 0 {
				t.Errorf("deletion vectors of rewritten data files are still live: %v", d)
			}
		})
	}
}

// danglingDVs lists the live deletion vectors of tbl's current snapshot
// that name a data file no longer in it.
func danglingDVs(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	fsys, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	var refs []string
	for _, m := range manifests {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			f := ent.DataFile()
			switch {
			case f.ContentType() == iceberg.EntryContentData:
				live[f.FilePath()] = true
			case table.IsDeletionVector(f):
				refs = append(refs, *f.ReferencedDataFile())
			}
		}
	}
	var out []string
	for _, r := range refs {
		if !live[r] {
			out = append(out, r)
		}
	}
	return out
}

// lineageOf reads id -> [_row_id, _last_updated_sequence_number] of tbl's
// rows with iceberg-go (an independent reader of the v3 spec's lineage).
func lineageOf(t *testing.T, tbl *table.Table) map[int64][2]int64 {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields("id", iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberColumnName)).ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64][2]int64{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		rid, seq := rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if rid.IsNull(i) || seq.IsNull(i) {
				t.Fatalf("iceberg-go reads no lineage for row %d", ids.Value(i))
			}
			out[ids.Value(i)] = [2]int64{rid.Value(i), seq.Value(i)}
		}
	}
	return out
}

// TestRowLineageColumns: on a v3 table the SQL endpoint answers _row_id and
// _last_updated_sequence_number as iceberg-go reads them (after appends, a
// deletion vector and a copy-on-write UPDATE), to a filtered reader too;
// SELECT * is unchanged.
func TestRowLineageColumns(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	tbl := e.createPeopleTableV(t, "crm", "lineage", true, 3)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	all := people(20)
	tbl = appendPeople(t, tbl, all[:8]...)
	tbl = appendPeople(t, tbl, all[8:]...)
	dvDelete(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(4)))
	before := lineageOf(t, e.loadTable(t, "crm", "lineage"))
	// A copy-on-write UPDATE (write.update.mode is not set) rewrites the
	// files of ids 1 and 2 and keeps every row's lineage: the copied rows
	// their _row_id and sequence number, the updated rows their _row_id
	// with the new snapshot's sequence number.
	execTag(t, c, "UPDATE crm.lineage SET salary = 1 WHERE id IN (1, 2)")
	cur := e.loadTable(t, "crm", "lineage")
	after, seq := lineageOf(t, cur), cur.CurrentSnapshot().SequenceNumber
	if len(after) != len(before) {
		t.Fatalf("%d rows after the update, %d before", len(after), len(before))
	}
	for id, b := range before {
		want := b
		if id == 1 || id == 2 {
			want[1] = seq
		}
		if after[id] != want {
			t.Errorf("row %d: lineage %v after the update, want %v (before: %v)", id, after[id], want, b)
		}
	}
	// The same with a merge-on-read UPDATE (a deletion vector and a new
	// file of the updated row).
	txn = cur.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"write.update.mode": table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	execTag(t, c, "UPDATE crm.lineage SET salary = 2 WHERE id = 3")
	cur = e.loadTable(t, "crm", "lineage")
	again, seq := lineageOf(t, cur), cur.CurrentSnapshot().SequenceNumber
	for id, b := range after {
		want := b
		if id == 3 {
			want[1] = seq
		}
		if again[id] != want {
			t.Errorf("row %d: lineage %v after the merge-on-read update, want %v", id, again[id], want)
		}
	}
	check := func(what string, conn *pgx.Conn, where string) {
		t.Helper()
		want := lineageOf(t, e.loadTable(t, "crm", "lineage"))
		got := map[int64][2]int64{}
		for _, r := range mustRows(t, conn, "SELECT id, _row_id, _last_updated_sequence_number FROM crm.lineage"+where) {
			got[r[0].(int64)] = [2]int64{r[1].(int64), r[2].(int64)}
		}
		for id := range want {
			if where != "" && id%2 == 1 {
				delete(want, id) // the filtered reader sees region us: even ids
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: SQL lineage\n %v\niceberg-go\n %v", what, got, want)
		}
	}
	check("admin", c, "")
	if rows := mustRows(t, c, "SELECT * FROM crm.lineage LIMIT 1"); len(rows) != 1 || len(rows[0]) != 5 {
		t.Fatalf("SELECT * answered %v, want one row of the table's 5 columns", rows)
	}
	e.f.NewPrincipal(t, "lineage_reader")
	e.grant(t, "lineage_reader", authz.Select, "crm", "lineage", &authz.DataFilter{RowFilter: "region = 'us'", ExcludeColumns: []string{"ssn"}})
	p, err := e.f.App.Store().PrincipalByName(t.Context(), "lineage_reader")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.f.App.Auth().Issue(t.Context(), p, []string{"catalog"})
	if err != nil {
		t.Fatal(err)
	}
	check("filtered", e.connect(t, "lineage_reader", tok.AccessToken), " WHERE true")
}
