package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sqlgw/engine"
)

// TestTableCache: a small table's rows are kept in the session after the
// first read; a commit, an earlier snapshot and a schema change each read
// their own rows; with the cache off the same queries answer the same.
func TestTableCache(t *testing.T) {
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprintf("kept=%v", kept), func(t *testing.T) {
			var opts []testkit.Option
			if !kept {
				opts = append(opts, func(c *app.Config) { c.SQLTableCacheBytes = -1 })
			}
			e := newEnv(t, opts...)
			eng := e.f.App.SQLEngine()
			tbl := e.createPeople(t, "crm", "kept")
			tbl = appendPeople(t, tbl, people(10)...)
			first := tbl.CurrentSnapshot().SnapshotID
			c := e.admin(t)
			check := func(sql, want string, args ...any) {
				t.Helper()
				if got := fmt.Sprint(mustRows(t, c, sql, args...)); got != want {
					t.Fatalf("%s: got %s, want %s", sql, got, want)
				}
			}
			// misses checks the copies made so far, and that the
			// statements since the last check were answered from a copy
			// (each statement plans at least once).
			var hits uint64
			misses := func(want uint64, statements int) {
				t.Helper()
				got := eng.TableCacheStats()
				if !kept {
					if got != (engine.TableCacheStats{}) {
						t.Fatalf("table cache off, yet %+v", got)
					}
					return
				}
				if got.Misses != want || got.Hits < hits+uint64(statements) {
					t.Fatalf("table cache: %+v, want %d misses and at least %d hits", got, want, hits+uint64(statements))
				}
				hits = got.Hits
			}
			check("SELECT count(*) FROM crm.kept", "[[10]]")
			misses(1, 0)
			for _, id := range []int64{3, 7} {
				check("SELECT name FROM crm.kept WHERE id = $1", fmt.Sprintf("[[person-%d]]", id), id)
			}
			misses(1, 2)

			// A commit: the next read sees it.
			tbl = appendPeople(t, tbl, person{id: 11, name: "late", region: "eu", ssn: "ssn-011", salary: 1})
			check("SELECT count(*), max(name) FROM crm.kept", "[[11 person-9]]")
			check("SELECT name FROM crm.kept WHERE id = 11", "[[late]]")
			misses(2, 1)
			// The earlier snapshot's copy is still there.
			check(fmt.Sprintf("SELECT count(*) FROM crm.kept AT (VERSION => %d)", first), "[[10]]")
			check("SELECT count(*) FROM crm.kept", "[[11]]")
			misses(2, 2)

			// A rename changes the rows' column names without a new snapshot.
			renameColumn(t, tbl, "ssn", "tax_id")
			check("SELECT tax_id FROM crm.kept WHERE id = 11", "[[ssn-011]]")
			misses(3, 1)
			if _, err := queryRows(t, c, "SELECT ssn FROM crm.kept"); err == nil {
				t.Fatal("the old column name still reads")
			}
			// The copies are the engine's: no catalog view lists them.
			for _, q := range []string{
				"SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%floe%'",
				"SELECT count(*) FROM information_schema.columns WHERE table_name LIKE '%floe%'",
				"SELECT count(*) FROM pg_catalog.pg_class WHERE relname LIKE '%floe%'",
				"SELECT count(*) FROM pg_tables WHERE tablename LIKE '%floe%'",
				"SELECT count(*) FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid WHERE c.relname = 'kept'",
			} {
				check(q, map[bool]string{true: "[[5]]", false: "[[0]]"}[strings.HasSuffix(q, "'kept'")])
			}
		})
	}
}

// TestTableCacheEvicts: with a budget smaller than the snapshots read,
// the least recently used copies are dropped and every answer stays right.
func TestTableCacheEvicts(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLTableCacheBytes = 64 << 10 })
	eng := e.f.App.SQLEngine()
	tbl := e.createPeople(t, "crm", "grow")
	var snaps []int64
	for i := range 10 {
		tbl = appendPeople(t, tbl, people(i + 1)[i])
		snaps = append(snaps, tbl.CurrentSnapshot().SnapshotID)
	}
	c := e.admin(t)
	for round := range 2 {
		for i, s := range snaps {
			rows := mustRows(t, c, fmt.Sprintf("SELECT count(*), CAST(sum(id) AS BIGINT) FROM crm.grow AT (VERSION => %d)", s))
			if got, want := fmt.Sprint(rows), fmt.Sprintf("[[%d %d]]", i+1, (i+1)*(i+2)/2); got != want {
				t.Fatalf("round %d, snapshot %d: got %s, want %s", round, i, got, want)
			}
		}
	}
	st := eng.TableCacheStats()
	if st.Evictions == 0 || st.Misses <= 10 {
		t.Fatalf("a 64 KiB budget over 10 growing snapshots read twice should evict: %+v", st)
	}
}
