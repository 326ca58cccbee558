package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
)

// TestFilePruning: WHERE conjuncts on a table read from its files skip the
// data files whose statistics rule them out, the answer never changes, and
// the audit event of each query says how many files it read and skipped.
func TestFilePruning(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLTableCacheBytes = -1 })
	tbl := e.createPeople(t, "crm", "p")
	all := people(50)
	for i := range 5 { // five data files: ids 1-10, 11-20, ..., 41-50
		tbl = appendPeople(t, tbl, all[i*10:i*10+10]...)
	}
	c := e.admin(t)
	tests := []struct {
		sql           string
		args          []any
		want          string
		files, pruned int // -1: not checked exactly
	}{
		{sql: "SELECT count(*) FROM crm.p WHERE id = 23", want: "[[1]]", files: 1, pruned: 4},
		{sql: "SELECT count(*) FROM crm.p WHERE id BETWEEN 5 AND 15", want: "[[11]]", files: 2, pruned: 3},
		{sql: "SELECT count(*) FROM crm.p WHERE id IN (3, 44)", want: "[[2]]", files: 2, pruned: 3},
		{sql: "SELECT count(*) FROM crm.p WHERE 20 >= id AND region = 'eu'", want: "[[10]]", files: 2, pruned: 3},
		{sql: "SELECT count(*) FROM crm.p WHERE id > 100", want: "[[0]]", files: 0, pruned: 5},
		{sql: "SELECT count(*) FROM crm.p WHERE salary >= 45000.5", want: "[[5]]", files: 1, pruned: 4},
		{sql: "SELECT count(*) FROM crm.p WHERE id IS NULL", want: "[[0]]", files: 0, pruned: 5},
		{sql: "SELECT name FROM crm.p WHERE name = 'person-7'", want: "[[person-7]]", files: -1, pruned: -1},
		// Not pruned: a disjunction, a parameter, an expression on the column.
		{sql: "SELECT count(*) FROM crm.p WHERE id = 23 OR id = 45", want: "[[2]]", files: 5, pruned: 0},
		{sql: "SELECT count(*) FROM crm.p WHERE id = $1", args: []any{int64(23)}, want: "[[1]]", files: 5, pruned: 0},
		{sql: "SELECT count(*) FROM crm.p WHERE id + 0 = 23", want: "[[1]]", files: 5, pruned: 0},
		// Inner joins prune each side by its own conjuncts.
		{sql: "SELECT count(*) FROM crm.p a JOIN crm.p b ON a.id = b.id WHERE a.id < 11", want: "[[10]]", files: 6, pruned: 4},
		{sql: "SELECT count(*) FROM crm.p a, crm.p b WHERE a.id = b.id AND b.id > 40 AND a.id > 30", want: "[[10]]", files: 3, pruned: 7},
		// An outer join is never pruned: b's NULL-extended rows satisfy IS NULL.
		{sql: "SELECT count(*) FROM crm.p a LEFT JOIN crm.p b ON a.id = b.id + 100 WHERE b.id IS NULL", want: "[[50]]", files: 10, pruned: 0},
		// A subquery's own WHERE prunes its table; the outer column is not b's.
		{sql: "SELECT count(*) FROM crm.p a WHERE EXISTS (SELECT 1 FROM crm.p b WHERE b.id = a.id AND b.id <= 10)", want: "[[10]]", files: 6, pruned: 4},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			if got := fmt.Sprint(mustRows(t, c, tt.sql, tt.args...)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			files, pruned := auditedFiles(t, e, tt.sql)
			if tt.files >= 0 && (files != tt.files || pruned != tt.pruned) {
				t.Fatalf("read %d files and skipped %d, want %d and %d", files, pruned, tt.files, tt.pruned)
			}
			if tt.files < 0 && (pruned == 0 || files+pruned != 5) {
				t.Fatalf("read %d files and skipped %d, want some skipped of 5", files, pruned)
			}
		})
	}
}

// auditedFiles waits for the sql.query event of a successful query with
// this SQL text and returns its files and files_pruned.
func auditedFiles(t *testing.T, e *env, sql string) (files, pruned int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := e.f.App.Store().AuditQuery(context.Background(), audit.Query{Action: "sql.query"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			var d struct {
				SQL    string `json:"sql"`
				Files  *int   `json:"files"`
				Pruned *int   `json:"files_pruned"`
			}
			if err := json.Unmarshal(r.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d.SQL == sql && r.Outcome == audit.OutcomeSuccess && d.Files != nil && d.Pruned != nil {
				return *d.Files, *d.Pruned
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no audit event for %q", sql)
	return 0, 0
}

// TestFilePruningEarlierSchema: a conjunct on a column renamed since an
// earlier snapshot still answers right when reading that snapshot.
func TestFilePruningEarlierSchema(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLTableCacheBytes = -1 })
	tbl := e.createPeople(t, "crm", "r")
	tbl = appendPeople(t, tbl, people(3)...)
	first := tbl.CurrentSnapshot().SnapshotID
	tbl = renameColumn(t, tbl, "name", "full_name")
	appendPeople(t, tbl, people(6)[3:]...)
	c := e.admin(t)
	for _, tt := range []struct{ sql, want string }{
		{fmt.Sprintf("SELECT id FROM crm.r AT (VERSION => %d) WHERE full_name = 'person-2'", first), "[[2]]"},
		{"SELECT id FROM crm.r WHERE full_name = 'person-5'", "[[5]]"},
		{"SELECT count(*) FROM crm.r WHERE full_name >= 'person-4'", "[[3]]"},
	} {
		if got := fmt.Sprint(mustRows(t, c, tt.sql)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.sql, got, tt.want)
		}
	}
}
