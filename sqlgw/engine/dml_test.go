package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// refRow is a row of a people table in the reference model: id, name,
// region, ssn, salary, with nil for NULL.
type refRow [5]any

// refTable is the reference model of a people table, kept in Go.
type refTable map[int64]refRow

func refOf(ps []person) refTable {
	m := refTable{}
	for _, p := range ps {
		m[p.id] = refRow{p.id, p.name, p.region, p.ssn, p.salary}
	}
	return m
}

// rows returns the model's rows ordered by id.
func (m refTable) rows() [][]any {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([][]any, len(ids))
	for i, id := range ids {
		r := m[id]
		out[i] = r[:]
	}
	return out
}

func (m refTable) clone() refTable {
	c := refTable{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// createPeopleTable creates ns.name, partitioned by region when
// partitioned is set.
func (e *env) createPeopleTable(t testing.TB, ns, name string, partitioned bool) *table.Table {
	t.Helper()
	return e.createPeopleTableV(t, ns, name, partitioned, 2)
}

// createPeopleTableV is createPeopleTable of format version version.
func (e *env) createPeopleTableV(t testing.TB, ns, name string, partitioned bool, version int) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := e.f.App.Catalog()
	nsp := catalog.Namespace{ns}
	if err := cat.CreateNamespace(ctx, e.f.Warehouse, nsp, nil); err != nil && !isExists(err) {
		t.Fatal(err)
	}
	req := catalog.CreateTableRequest{Name: name, Schema: peopleSchema(), Properties: map[string]string{"format-version": fmt.Sprint(version)}}
	if partitioned {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
		req.Spec = &spec
	}
	if _, err := cat.CreateTable(ctx, e.f.Warehouse, nsp, req); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(ctx, e.f.Warehouse, catalog.Ident{Namespace: nsp, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// loadTable loads ns.name through the lake.
func (e *env) loadTable(t *testing.T, ns, name string) *table.Table {
	t.Helper()
	tbl, err := e.lk.LoadTable(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// execTag runs a statement and returns its command tag.
func execTag(t *testing.T, c *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	tag, err := c.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.String()
}

// icebergRows reads a table's current rows with iceberg-go (a reader
// independent of the SQL endpoint), ordered by id, as refTable rows.
func icebergRows(t *testing.T, tbl *table.Table) [][]any {
	t.Helper()
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	m := refTable{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var r refRow
			for j := range 5 {
				col := rec.Column(j)
				if col.IsNull(i) {
					continue
				}
				switch a := col.(type) {
				case *array.Int64:
					r[j] = a.Value(i)
				case *array.String:
					r[j] = a.Value(i)
				case *array.LargeString:
					r[j] = a.Value(i)
				case *array.Float64:
					r[j] = a.Value(i)
				default:
					t.Fatalf("column %d: %T", j, col)
				}
			}
			m[r[0].(int64)] = r
		}
	}
	return m.rows()
}

func sameRows(t *testing.T, what string, got, want [][]any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

const selectPeople = "SELECT id, name, region, ssn, salary FROM %s ORDER BY id"

func TestDMLStatements(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	src := e.createPeople(t, "crm", "src")
	appendPeople(t, src, people(3)...)
	for _, tc := range []struct {
		partitioned bool
		version     int
		mor         bool // merge-on-read: deletion vectors
	}{{false, 2, false}, {true, 2, false}, {false, 3, false}, {true, 3, false}, {false, 3, true}, {true, 3, true}} {
		partitioned := tc.partitioned
		t.Run(fmt.Sprintf("partitioned=%v/v%d/mor=%v", partitioned, tc.version, tc.mor), func(t *testing.T) {
			name := fmt.Sprintf("people_%v_v%d_%v", partitioned, tc.version, tc.mor)
			qn := "crm." + name
			tbl := e.createPeopleTableV(t, "crm", name, partitioned, tc.version)
			if tc.mor {
				txn := tbl.NewTransaction()
				if err := txn.SetProperties(iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
					"write.merge.mode": "merge-on-read"}); err != nil {
					t.Fatal(err)
				}
				var err error
				if tbl, err = txn.Commit(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// Two appends: two data files (or more, by partition).
			all := people(20)
			appendPeople(t, tbl, all[:10]...)
			tbl = appendPeople(t, e.loadTable(t, "crm", name), all[10:]...)
			s0 := tbl.CurrentSnapshot().SnapshotID
			ref := refOf(all)
			orig := ref.clone()
			check := func(what string) {
				t.Helper()
				sameRows(t, what+" (SQL)", mustRows(t, c, fmt.Sprintf(selectPeople, qn)), ref.rows())
				sameRows(t, what+" (iceberg-go)", icebergRows(t, e.loadTable(t, "crm", name)), ref.rows())
				if tc.version >= 3 {
					cur := e.loadTable(t, "crm", name)
					checkLineage(t, cur)
					if d := danglingDVs(t, cur); len(d) > 0 {
						t.Fatalf("%s: deletion vectors of removed data files: %v", what, d)
					}
					if what != "insert values" && what != "insert select" && tc.mor != (liveDVs(t, cur) > 0) {
						t.Fatalf("%s: %d live deletion vectors in merge-on-read=%v", what, liveDVs(t, cur), tc.mor)
					}
				}
			}

			// INSERT VALUES with NULLs and casts (int and text to DOUBLE).
			if tag := execTag(t, c, "INSERT INTO "+qn+" VALUES (21, 'x', 'eu', NULL, 5), (22, NULL, 'us', 'ssn-22', '7.5')"); tag != "INSERT 0 2" {
				t.Fatalf("tag %q", tag)
			}
			ref[21] = refRow{int64(21), "x", "eu", nil, float64(5)}
			ref[22] = refRow{int64(22), nil, "us", "ssn-22", 7.5}
			check("insert values")

			// INSERT SELECT with a column list and a parameter.
			if tag := execTag(t, c, "INSERT INTO "+qn+" (region, id) SELECT region, id + $1 FROM crm.src WHERE id <= 3", int64(100)); tag != "INSERT 0 3" {
				t.Fatalf("tag %q", tag)
			}
			for _, p := range people(3) {
				ref[p.id+100] = refRow{p.id + 100, nil, p.region, nil, nil}
			}
			check("insert select")

			// A NULL for the required id is refused; nothing is committed.
			snap := e.loadTable(t, "crm", name).CurrentSnapshot().SnapshotID
			_, err := c.Exec(context.Background(), "INSERT INTO "+qn+" (name) VALUES ('no id')")
			wantCode(t, err, "23502")
			_, err = c.Exec(context.Background(), "INSERT INTO "+qn+" VALUES (1, 2, 3, 4, 5, 6)")
			wantCode(t, err, "42601")
			_, err = c.Exec(context.Background(), "INSERT INTO "+qn+" (id) VALUES ('not a number')")
			wantCode(t, err, "22P02")

			// DELETE.
			if tag := execTag(t, c, "DELETE FROM "+qn+" WHERE region = 'eu' AND id > 15 AND id < 20"); tag != "DELETE 2" {
				t.Fatalf("tag %q", tag)
			}
			delete(ref, 17)
			delete(ref, 19)
			check("delete")
			if tag := execTag(t, c, "DELETE FROM "+qn+" p WHERE p.id = 9999"); tag != "DELETE 0" {
				t.Fatalf("tag %q", tag)
			}
			if tag := execTag(t, c, "DELETE FROM "+qn+" p USING crm.src s WHERE s.id = p.id - 100"); tag != "DELETE 3" {
				t.Fatalf("tag %q", tag)
			}
			for id := int64(101); id <= 103; id++ {
				delete(ref, id)
			}
			check("delete using")
			if got := e.loadTable(t, "crm", name).CurrentSnapshot(); got.SnapshotID == snap {
				t.Fatal("no snapshot committed")
			}

			// UPDATE with NULLs (NULL * 2 stays NULL) and expressions.
			tag := execTag(t, c, "UPDATE "+qn+" SET salary = salary * 2, name = upper(name) WHERE id % 3 = 0 OR id = 22")
			n := 0
			for id, r := range ref {
				if id%3 == 0 || id == 22 {
					n++
					if r[1] != nil {
						r[1] = strings.ToUpper(r[1].(string))
					}
					if r[4] != nil {
						r[4] = r[4].(float64) * 2
					}
					ref[id] = r
				}
			}
			if want := fmt.Sprintf("UPDATE %d", n); tag != want {
				t.Fatalf("tag %q, want %q", tag, want)
			}
			check("update")
			// Moving a row to another partition, and setting NULL.
			execTag(t, c, "UPDATE "+qn+" SET region = 'us' WHERE id = 1")
			execTag(t, c, "UPDATE "+qn+" AS x SET ssn = NULL WHERE x.ssn LIKE 'ssn-00%'")
			r := ref[1]
			r[2] = "us"
			ref[1] = r
			for id, r := range ref {
				if s, ok := r[3].(string); ok && strings.HasPrefix(s, "ssn-00") {
					r[3] = nil
					ref[id] = r
				}
			}
			check("update partition and null")

			// MERGE: delete, update, insert.
			tag = execTag(t, c, "MERGE INTO "+qn+" AS x USING (SELECT * FROM (VALUES (2, 'merged', true), (4, 'gone', false), (500, 'new', true)) AS v(id, name, keep)) AS s ON x.id = s.id "+
				"WHEN MATCHED AND NOT s.keep THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name "+
				"WHEN NOT MATCHED THEN INSERT (id, name, region) VALUES (s.id, s.name, 'eu')")
			if tag != "MERGE 3" {
				t.Fatalf("tag %q", tag)
			}
			delete(ref, 4)
			r = ref[2]
			r[1] = "merged"
			ref[2] = r
			ref[500] = refRow{int64(500), "new", "eu", nil, nil}
			check("merge")
			// A target row matched twice is an error.
			_, err = c.Exec(context.Background(), "MERGE INTO "+qn+" AS x USING (SELECT * FROM (VALUES (2), (2)) AS v(id)) AS s ON x.id = s.id WHEN MATCHED THEN DELETE")
			wantCode(t, err, "21000")
			check("after refused merge")

			// Time travel to before the DML shows the old rows.
			sameRows(t, "time travel", mustRows(t, c, fmt.Sprintf(selectPeople, qn+" AT (VERSION => "+fmt.Sprint(s0)+")")), orig.rows())
		})
	}
}

func TestDMLEmptyTableAndMergeInsert(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	e.createPeopleTable(t, "crm", "fresh", true)
	if tag := execTag(t, c, "DELETE FROM crm.fresh"); tag != "DELETE 0" {
		t.Fatalf("tag %q", tag)
	}
	if e.loadTable(t, "crm", "fresh").CurrentSnapshot() != nil {
		t.Fatal("a DELETE that matched nothing committed a snapshot")
	}
	tag := execTag(t, c, "MERGE INTO crm.fresh t USING (SELECT 7 AS id, 'eu' AS region) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, region) VALUES (s.id, s.region)")
	if tag != "MERGE 1" {
		t.Fatalf("tag %q", tag)
	}
	sameRows(t, "merge into empty", mustRows(t, c, fmt.Sprintf(selectPeople, "crm.fresh")), [][]any{{int64(7), nil, "eu", nil, nil}})
	// NOT MATCHED BY SOURCE and BY TARGET together (a full join).
	tag = execTag(t, c, "MERGE INTO crm.fresh t USING (SELECT 8 AS id) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN NOT MATCHED THEN INSERT (id, region) VALUES (s.id, 'us')")
	if tag != "MERGE 2" {
		t.Fatalf("tag %q", tag)
	}
	sameRows(t, "merge by source", mustRows(t, c, fmt.Sprintf(selectPeople, "crm.fresh")), [][]any{{int64(8), nil, "us", nil, nil}})
	// Every file the DML wrote went through the object store, encrypted.
	tbl := e.loadTable(t, "crm", "fresh")
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("plan: %v", err)
	}
	for _, task := range tasks {
		bk, key, err := objstore.ParseLocation(task.File.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.f.App.Objects().Head(context.Background(), bk, key, bucket.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !info.Encrypted {
			t.Fatalf("data file %s is not encrypted", key)
		}
	}
}

func TestDMLTransactionBlockAndAudit(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(4)...)
	c := e.admin(t)
	// Inside a block the DELETE is staged; ROLLBACK drops it.
	execTag(t, c, "BEGIN")
	execTag(t, c, "DELETE FROM crm.people")
	execTag(t, c, "ROLLBACK")
	if n := len(mustRows(t, c, "SELECT * FROM crm.people")); n != 4 {
		t.Fatalf("rows %d", n)
	}
	execTag(t, c, "DELETE FROM crm.people WHERE id = 3")
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := e.f.App.Store().AuditQuery(context.Background(), audit.Query{Action: "sql.query"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range recs {
			d := string(r.Detail)
			if r.Outcome == audit.OutcomeSuccess && strings.Contains(d, `"written":["floe.crm.people"]`) && strings.Contains(d, `"rows_affected":1`) && strings.Contains(d, `"statement":"DELETE"`) {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit event of the DELETE in %d events", len(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDMLAuthorization(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(10)...)
	secret := e.createPeople(t, "crm", "secret")
	appendPeople(t, secret, person{id: 1, name: "hidden"})
	for _, name := range []string{"reader", "writer", "filtered", "inserter"} {
		e.f.NewPrincipal(t, name)
	}
	e.grant(t, "reader", authz.Select, "crm", "people", nil)
	e.grant(t, "writer", authz.Select, "crm", "people", nil)
	e.grant(t, "writer", authz.Modify, "crm", "people", nil)
	e.grant(t, "filtered", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'"})
	e.grant(t, "filtered", authz.Modify, "crm", "people", nil)
	e.grant(t, "inserter", authz.Modify, "crm", "people", nil)
	as := func(name string, scopes ...string) *pgx.Conn {
		p, err := e.f.App.Store().PrincipalByName(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := e.f.App.Auth().Issue(context.Background(), p, scopes)
		if err != nil {
			t.Fatal(err)
		}
		return e.connect(t, name, tok.AccessToken)
	}
	deny := func(c *pgx.Conn, sql, msg string) {
		t.Helper()
		_, err := c.Exec(context.Background(), sql)
		pe := wantCode(t, err, "42501")
		if !strings.Contains(pe.Message, msg) {
			t.Fatalf("%s: message %q, want %q", sql, pe.Message, msg)
		}
	}
	reader := as("reader", "catalog")
	deny(reader, "DELETE FROM crm.people WHERE id = 1", `principal "reader" lacks MODIFY on table "crm.people"`)
	deny(reader, "INSERT INTO crm.people (id) VALUES (99)", `lacks MODIFY`)
	// A read-only token may not write, whatever the grants (the admin too).
	deny(as("writer", "catalog:read"), "UPDATE crm.people SET name = 'x'", "read-only")
	admin, err := e.f.App.Store().PrincipalByName(context.Background(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.f.App.Auth().Issue(context.Background(), admin, []string{"catalog:read"})
	if err != nil {
		t.Fatal(err)
	}
	deny(e.connect(t, "admin", tok.AccessToken), "DELETE FROM crm.people", "read-only")
	// A filtered principal may not change the table, not even rows it sees.
	filtered := as("filtered", "catalog")
	for _, sql := range []string{
		"DELETE FROM crm.people",
		"DELETE FROM crm.people WHERE region = 'eu'",
		"UPDATE crm.people SET salary = 0",
		"INSERT INTO crm.people (id, region) VALUES (50, 'us')",
		"MERGE INTO crm.people t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
	} {
		deny(filtered, sql, "data filter")
	}
	// MODIFY without SELECT: INSERT only.
	inserter := as("inserter", "catalog")
	if tag := execTag(t, inserter, "INSERT INTO crm.people (id, region) VALUES (50, 'us')"); tag != "INSERT 0 1" {
		t.Fatalf("tag %q", tag)
	}
	deny(inserter, "DELETE FROM crm.people WHERE id = 50", "lacks SELECT")
	// The source of a write is read with the caller's privileges.
	writer := as("writer", "catalog")
	deny(writer, "INSERT INTO crm.people SELECT * FROM crm.secret", `lacks SELECT on table "crm.secret"`)
	deny(writer, "DELETE FROM crm.people WHERE id IN (SELECT id FROM crm.secret)", `lacks SELECT on table "crm.secret"`)
	deny(writer, "DELETE FROM crm.people WHERE id IN (SELECT 1 FROM read_parquet('/etc/passwd'))", "read_parquet")
	// Nothing changed but the inserter's row.
	admin2 := e.admin(t)
	if rows := mustRows(t, admin2, "SELECT count(*) FROM crm.people"); rows[0][0] != int64(11) {
		t.Fatalf("rows %v", rows)
	}
	if tag := execTag(t, writer, "DELETE FROM crm.people WHERE id = 50"); tag != "DELETE 1" {
		t.Fatalf("tag %q", tag)
	}
}

func TestDMLConcurrent(t *testing.T) {
	t.Run("v2", func(t *testing.T) { testDMLConcurrent(t, false) })
	// Merge-on-read: each UPDATE replaces the file's deletion vector; a
	// concurrent one must not resurrect a row the other deleted.
	t.Run("v3/merge-on-read", func(t *testing.T) { testDMLConcurrent(t, true) })
}

func testDMLConcurrent(t *testing.T, mor bool) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "counter")
	if mor {
		tbl = e.createPeopleTableV(t, "crm", "counter_v3", false, 3)
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{"write.update.mode": "merge-on-read"}); err != nil {
			t.Fatal(err)
		}
		var err error
		if tbl, err = txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	qn := "crm." + tbl.Identifier()[len(tbl.Identifier())-1]
	appendPeople(t, tbl, people(6)...)
	const workers, rounds = 2, 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok       int
		inserted int
		failures []error
	)
	for w := range workers {
		c := e.admin(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// Read-modify-write of one row: a lost update would show.
				_, err := c.Exec(context.Background(), "UPDATE "+qn+" SET salary = salary + 1 WHERE id = 1")
				mu.Lock()
				if err == nil {
					ok++
				} else {
					failures = append(failures, err)
				}
				mu.Unlock()
				_, err = c.Exec(context.Background(), "INSERT INTO "+qn+" (id, region) VALUES ($1, 'eu')", int64(1000+w*100+i))
				mu.Lock()
				if err == nil {
					inserted++
				} else {
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range failures {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "40001" {
			t.Fatalf("concurrent DML failed: %v", err)
		}
	}
	if ok+inserted < workers*rounds {
		t.Fatalf("only %d updates and %d inserts of %d succeeded", ok, inserted, 2*workers*rounds)
	}
	c := e.admin(t)
	rows := mustRows(t, c, "SELECT salary FROM "+qn+" WHERE id = 1")
	if want := float64(1000 + ok); len(rows) != 1 || rows[0][0] != want {
		t.Fatalf("salary %v after %d successful updates, want %v (a lost update)", rows, ok, want)
	}
	rows = mustRows(t, c, "SELECT count(*) FROM "+qn)
	if want := int64(6 + inserted); rows[0][0] != want {
		t.Fatalf("count %v, want %d", rows, want)
	}
	if mor {
		cur := e.loadTable(t, "crm", "counter_v3")
		if liveDVs(t, cur) == 0 {
			t.Fatal("no deletion vector: the merge-on-read path was not taken")
		}
		tasks, err := cur.Scan().PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if len(task.DeletionVectorFiles) > 1 {
				t.Fatalf("data file %s has %d live deletion vectors (v3 allows one)", task.File.FilePath(), len(task.DeletionVectorFiles))
			}
		}
		checkLineage(t, cur)
	}
	t.Logf("%d updates and %d inserts succeeded, %d gave up with 40001", ok, inserted, len(failures))
}
