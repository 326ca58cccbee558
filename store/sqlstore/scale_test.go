package sqlstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/catalog"
)

// bulkSQL fills namespace "big" of warehouse "w" with n tables t000001...,
// n/10 views among them (t000010v, t000020v, ...), and n/5 child namespaces,
// in one statement each, then updates the statistics.
func bulkSQL(dialect string, n int) []string {
	if dialect == DialectSQLite {
		return []string{
			fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
			INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at)
			SELECT 'w', 'big', printf('t%%06d', i), 'table', 's3://b/t' || i, '2026-01-01T00:00:00.000000Z' FROM c`, n),
			fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
			INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at)
			SELECT 'w', 'big', printf('t%%06dv', 10 * i), 'view', 's3://b/v' || i, '2026-01-01T00:00:00.000000Z' FROM c`, n/10),
			fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
			INSERT INTO namespaces (warehouse, name, parent, properties)
			SELECT 'w', 'big' || char(31) || printf('n%%06d', i), 'big', '{}' FROM c`, n/5),
			`ANALYZE`,
		}
	}
	return []string{
		fmt.Sprintf(`INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at)
		SELECT 'w', 'big', 't' || lpad(i::text, 6, '0'), 'table', 's3://b/t' || i, now() FROM generate_series(1, %d) AS i`, n),
		fmt.Sprintf(`INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at)
		SELECT 'w', 'big', 't' || lpad((10 * i)::text, 6, '0') || 'v', 'view', 's3://b/v' || i, now() FROM generate_series(1, %d) AS i`, n/10),
		fmt.Sprintf(`INSERT INTO namespaces (warehouse, name, parent, properties)
		SELECT 'w', 'big' || chr(31) || 'n' || lpad(i::text, 6, '0'), 'big', '{}' FROM generate_series(1, %d) AS i`, n/5),
		`VACUUM ANALYZE`,
	}
}

// TestListScales checks that listing pages cost the same with 100,000
// tables as with 100, wherever the page starts, and that the planner uses
// the pagination indexes. Under the race detector SQLite gets 25,000 tables,
// since loading 100,000 takes it 20 s there.
func TestListScales(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a namespace with 100,000 tables")
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, b.dsn(t), Options{})
			if err := s.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///w"}); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"big", "small"} {
				if err := s.CreateNamespace(ctx, "w", catalog.Namespace{n}, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 100 {
				id := catalog.Ident{Namespace: catalog.Namespace{"small"}, Name: fmt.Sprintf("t%06d", i)}
				if err := s.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id, Kind: catalog.KindTable, New: "x"}}); err != nil {
					t.Fatal(err)
				}
				if err := s.CreateNamespace(ctx, "w", catalog.Namespace{"small", fmt.Sprintf("n%05d", i)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			n := 100_000
			if raceEnabled && s.d.name == DialectSQLite {
				n = 25_000
			}
			start := time.Now()
			for _, q := range bulkSQL(s.d.name, n) {
				if _, err := s.db().ExecContext(ctx, q); err != nil {
					t.Fatalf("bulk load: %v", err)
				}
			}
			t.Logf("loaded %d tables, %d views and %d namespaces in %v", n, n/10, n/5, time.Since(start))

			// median returns the median latency of fn over a few runs.
			median := func(fn func() int, want int) time.Duration {
				var ds []time.Duration
				for range 15 {
					start := time.Now()
					if got := fn(); got != want {
						t.Fatalf("page of %d names, want %d", got, want)
					}
					ds = append(ds, time.Since(start))
				}
				slices.Sort(ds)
				return ds[len(ds)/2]
			}
			tables := func(ns, after string, want int) time.Duration {
				return median(func() int {
					names, err := s.ListEntities(ctx, "w", catalog.Namespace{ns}, catalog.KindTable, after, 100)
					if err != nil {
						t.Fatal(err)
					}
					if len(names) > 0 && names[0] <= after {
						t.Fatalf("page after %q starts at %q", after, names[0])
					}
					return len(names)
				}, want)
			}
			namespaces := func(parent, after string, want int) time.Duration {
				return median(func() int {
					got, err := s.ListNamespaces(ctx, "w", catalog.Namespace{parent}, after, 100)
					if err != nil {
						t.Fatal(err)
					}
					return len(got)
				}, want)
			}
			base := tables("small", "", 100)
			pages := map[string]time.Duration{
				"tables: first page":  tables("big", "", 100),
				"tables: middle page": tables("big", fmt.Sprintf("t%06d", n/2), 100),
				"tables: last page":   tables("big", fmt.Sprintf("t%06d", n-50), 50),
				"views: last page":    0,
			}
			pages["views: last page"] = median(func() int {
				names, err := s.ListEntities(ctx, "w", catalog.Namespace{"big"}, catalog.KindView, fmt.Sprintf("t%06dv", n-1000), 100)
				if err != nil {
					t.Fatal(err)
				}
				return len(names)
			}, 100)
			nsBase := namespaces("small", "", 100)
			pages["namespaces: middle page"] = namespaces("big", catalog.Namespace{"big", fmt.Sprintf("n%06d", n/10)}.Key(), 100)
			pages["namespaces: last page"] = namespaces("big", catalog.Namespace{"big", fmt.Sprintf("n%06d", n/5-50)}.Key(), 50)
			// Generous bounds: the suite runs under -race on small machines.
			bound := 4*max(base, nsBase) + 3*time.Millisecond
			t.Logf("page of 100 in a namespace of 100 tables: %v; of 100 namespaces: %v", base, nsBase)
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for k := range pages {
					if !yield(k) {
						return
					}
				}
			}) {
				d := pages[name]
				t.Logf("%s of %d tables / %d namespaces: %v", name, n, n/5, d)
				if d > bound {
					t.Errorf("%s took %v, more than %v: listing does not scale", name, d, bound)
				}
			}

			// The plans walk an index from the page's start, without sorting.
			// SQLite must use the pagination indexes; PostgreSQL's planner
			// may prefer the primary key where its statistics say the other
			// kind is rare.
			for _, c := range []struct {
				query string
				args  []any
				index string
			}{
				{listEntitiesQuery + " LIMIT ?", []any{"w", "big", "table", fmt.Sprintf("t%06d", n/2), 100}, "entities_by_kind"},
				{listNamespacesQuery + " LIMIT ?", []any{"w", "big", catalog.Namespace{"big", fmt.Sprintf("n%06d", n/10)}.Key(), 100}, "namespaces_by_parent"},
			} {
				explain := "EXPLAIN QUERY PLAN "
				if s.d.name == DialectPostgres {
					explain = "EXPLAIN "
				}
				rows, err := s.db().QueryContext(ctx, s.d.rebind(explain+c.query), c.args...)
				if err != nil {
					t.Fatal(err)
				}
				cols, _ := rows.Columns()
				var plan []string
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
				}
				rows.Close()
				text := strings.Join(plan, "\n")
				t.Logf("plan of %s:\n%s", c.query, text)
				ok := strings.Contains(text, c.index) && !strings.Contains(text, "TEMP B-TREE")
				if s.d.name == DialectPostgres {
					ok = strings.Contains(text, "Index") && strings.Contains(text, "(name > ") && !strings.Contains(text, "Sort")
				}
				if !ok {
					t.Errorf("the plan of %q does not walk %s:\n%s", c.query, c.index, text)
				}
			}
		})
	}
}
