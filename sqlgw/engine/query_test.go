package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

func TestSelectBasics(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(10)...)
	c := e.admin(t)
	rows := mustRows(t, c, "SELECT count(*), sum(salary) FROM crm.people")
	if len(rows) != 1 || rows[0][0] != int64(10) || rows[0][1] != float64(55000) {
		t.Fatalf("got %v", rows)
	}
	// Extended protocol with a parameter, prepared once and run twice.
	if _, err := c.Prepare(context.Background(), "byid", "SELECT id, name FROM crm.people WHERE id = $1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{3, 7} {
		rows = mustRows(t, c, "byid", id)
		if len(rows) != 1 || rows[0][0] != id || rows[0][1] != fmt.Sprintf("person-%d", id) {
			t.Fatalf("id %d: got %v", id, rows)
		}
	}
	// Simple protocol.
	rows = mustRows(t, c, "SELECT name FROM crm.people WHERE id = 4", pgx.QueryExecModeSimpleProtocol)
	if len(rows) != 1 || rows[0][0] != "person-4" {
		t.Fatalf("simple protocol: got %v", rows)
	}
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM floe.crm.people p WHERE p.region = 'eu'").Scan(&n); err != nil || n != 5 {
		t.Fatalf("three-part name: %d %v", n, err)
	}
	// A new snapshot is seen by the same prepared statement.
	tbl, err := e.lk.LoadTable(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"})
	if err != nil {
		t.Fatal(err)
	}
	appendPeople(t, tbl, person{id: 11, name: "late", region: "eu"})
	rows = mustRows(t, c, "byid", int64(11))
	if len(rows) != 1 || rows[0][1] != "late" {
		t.Fatalf("after append: got %v", rows)
	}
	// Joins across namespaces and CTEs.
	other := e.createPeople(t, "hr", "staff")
	appendPeople(t, other, people(3)...)
	rows = mustRows(t, c, "WITH s AS (SELECT id FROM hr.staff) SELECT count(*) FROM crm.people p JOIN s ON s.id = p.id")
	if rows[0][0] != int64(3) {
		t.Fatalf("join: got %v", rows)
	}
	// Unknown tables.
	_, err = queryRows(t, c, "SELECT * FROM crm.nope")
	wantCode(t, err, "42P01")
	_, err = queryRows(t, c, "SELECT * FROM nope")
	wantCode(t, err, "42P01")
}

// wantCode fails unless err is a PostgreSQL error with SQLSTATE code.
func wantCode(t *testing.T, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("want SQLSTATE %s, got %v", code, err)
	}
	if pe.Code != code {
		t.Fatalf("want SQLSTATE %s, got %s: %s", code, pe.Code, pe.Message)
	}
	return pe
}

func TestTimeTravel(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	tbl = appendPeople(t, tbl, people(4)...)
	first := tbl.CurrentSnapshot()
	time.Sleep(20 * time.Millisecond)
	appendPeople(t, tbl, person{id: 100, name: "new"})
	c := e.admin(t)
	count := func(sql string) int64 {
		t.Helper()
		rows := mustRows(t, c, sql)
		return rows[0][0].(int64)
	}
	if n := count("SELECT count(*) FROM crm.people"); n != 5 {
		t.Fatalf("current: %d", n)
	}
	if n := count(fmt.Sprintf("SELECT count(*) FROM crm.people AT (VERSION => %d)", first.SnapshotID)); n != 4 {
		t.Fatalf("version: %d", n)
	}
	ts := time.UnixMilli(first.TimestampMs).UTC().Format("2006-01-02 15:04:05.000")
	if n := count(fmt.Sprintf("SELECT count(*) FROM crm.people AT (TIMESTAMP => TIMESTAMP '%s')", ts)); n != 4 {
		t.Fatalf("timestamp: %d", n)
	}
	// Both versions in one query.
	rows := mustRows(t, c, fmt.Sprintf("SELECT count(*) FROM crm.people n LEFT JOIN crm.people AS o AT (VERSION => %d) ON o.id = n.id WHERE o.id IS NULL", first.SnapshotID))
	if rows[0][0] != int64(1) {
		t.Fatalf("diff: %v", rows)
	}
	_, err := queryRows(t, c, "SELECT * FROM crm.people AT (VERSION => 12345)")
	wantCode(t, err, "42704")
	_, err = queryRows(t, c, "SELECT * FROM crm.people AT (TIMESTAMP => '2000-01-01')")
	wantCode(t, err, "42704")
}

func TestPositionDeletes(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeopleWith(t, "crm", "people", map[string]string{"write.delete.mode": "merge-on-read", "format-version": "2"})
	tbl = appendPeople(t, tbl, people(10)...)
	before := tbl.CurrentSnapshot().SnapshotID
	tx := tbl.NewTransaction()
	if err := tx.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("id"), int64(3)), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, task := range tasks {
		pos += len(task.DeleteFiles)
	}
	if pos == 0 {
		t.Fatal("the delete wrote no position delete file; the test does not exercise them")
	}
	c := e.admin(t)
	rows := mustRows(t, c, "SELECT id FROM crm.people ORDER BY id")
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r[0].(int64))
	}
	if want := []int64{1, 2, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	rows = mustRows(t, c, fmt.Sprintf("SELECT count(*) FROM crm.people AT (VERSION => %d)", before))
	if rows[0][0] != int64(10) {
		t.Fatalf("before the delete: %v", rows)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(3000)...)
	c := e.admin(t)
	// A CancelRequest on its own connection, as clients send it.
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = c.PgConn().CancelRequest(context.Background())
	}()
	start := time.Now()
	_, err := c.Exec(context.Background(), "SELECT count(*) FROM crm.people a, crm.people b, crm.people c WHERE a.salary + b.salary > c.salary")
	wantCode(t, err, "57014")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %s", d)
	}
	// The session is still usable.
	rows := mustRows(t, c, "SELECT count(*) FROM crm.people")
	if rows[0][0] != int64(3000) {
		t.Fatalf("after cancel: %v", rows)
	}
}

// TestAudit: every sql.query event names the login token (token_id) and
// the principal's id, as the catalog's events do; a statement refused with
// SQLSTATE 42501 is outcome denied (issue 15), with the missing privilege
// when the refusal names one.
func TestAudit(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(5)...)
	tok := e.f.Token(t)
	claims, err := e.f.App.Auth().Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	c := e.connect(t, "admin", tok)
	mustRows(t, c, "SELECT * FROM crm.people WHERE region = 'eu'")
	_, _ = queryRows(t, c, "SELECT * FROM read_csv('/etc/passwd')")
	p, secret, err := e.f.App.Auth().CreatePrincipal(context.Background(), "nosy", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	e.grant(t, "nosy", authz.Describe, "crm", "people", nil)
	nosy := e.connect(t, "nosy", e.f.TokenFor(t, p.ClientID, secret))
	_, err = queryRows(t, nosy, "SELECT name FROM crm.people")
	wantCode(t, err, "42501")
	_, err = nosy.Exec(context.Background(), "DELETE FROM crm.people WHERE id = 1")
	wantCode(t, err, "42501")
	var found, refused, lacksSelect, lacksModify bool
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !(found && refused && lacksSelect && lacksModify) {
		recs, err := e.f.App.Store().AuditQuery(context.Background(), audit.Query{Action: "sql.query"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			var d map[string]any
			if err := json.Unmarshal(r.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d["token_id"] == nil || d["token_id"] == "" || d["principal_id"] == nil || d["principal_id"] == "" {
				t.Errorf("sql.query event %d without the token or principal id: %s", r.Seq, r.Detail)
			}
			sql, _ := d["sql"].(string)
			errText, _ := d["error"].(string)
			if r.Principal == "admin" && d["token_id"] == claims.TokenID && d["principal_id"] == claims.PrincipalID &&
				r.Outcome == audit.OutcomeSuccess && d["rows"] == float64(3) && strings.Contains(string(r.Detail), "floe.crm.people") && strings.Contains(sql, "region = 'eu'") {
				found = true
			}
			if r.Principal == "admin" && r.Outcome == audit.OutcomeDenied && strings.Contains(sql, "read_csv") && strings.HasPrefix(errText, "42501 ") {
				refused = true
			}
			if r.Principal == "nosy" && r.Outcome == audit.OutcomeDenied && strings.HasPrefix(sql, "SELECT name") && d["privilege"] == "SELECT" && strings.HasPrefix(errText, "42501 ") {
				lacksSelect = true
			}
			if r.Principal == "nosy" && r.Outcome == audit.OutcomeDenied && strings.HasPrefix(sql, "DELETE") && d["privilege"] == "MODIFY" {
				lacksModify = true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !found || !refused || !lacksSelect || !lacksModify {
		t.Fatalf("audit events: query %v, refused function %v, refused SELECT %v, refused DELETE %v", found, refused, lacksSelect, lacksModify)
	}
}

// TestSplitFilesReadOnce: iceberg-go plans a Parquet file larger than
// read.split.target-size as one task per range of row groups; the endpoint
// must still read each data file once.
func TestSplitFilesReadOnce(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeopleWith(t, "crm", "split", map[string]string{
		"read.split.target-size":        "1",
		"write.parquet.row-group-limit": "10",
	})
	tbl = appendPeople(t, tbl, people(50)...)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 2 || len(lake.WholeFiles(tasks)) != 1 {
		t.Fatalf("the test needs one data file planned as several split tasks; got %d tasks", len(tasks))
	}
	c := e.admin(t)
	got := mustRows(t, c, "SELECT count(*), CAST(sum(id) AS BIGINT) FROM crm.split")
	if fmt.Sprint(got) != "[[50 1275]]" {
		t.Errorf("count, sum = %v, want [[50 1275]]", got)
	}
}
