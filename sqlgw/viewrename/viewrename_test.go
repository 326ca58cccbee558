package viewrename_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sqlgw/viewrename"
)

// shared renames crm.accounts to sales.customers and crm.orders to
// sales.orders; anything else is not shared.
func shared(ns []string, name string) (viewrename.Name, bool) {
	if len(ns) != 1 || !strings.EqualFold(ns[0], "crm") {
		return viewrename.Name{}, false
	}
	switch strings.ToLower(name) {
	case "accounts":
		return viewrename.Name{Namespace: "sales", Name: "customers"}, true
	case "orders":
		return viewrename.Name{Namespace: "sales", Name: "orders"}, true
	}
	return viewrename.Name{}, false
}

func TestRename(t *testing.T) {
	r := viewrename.New()
	defer r.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name, dialect, query string
		defaultNS            []string
		want                 string
		err                  error // nil: success
	}{
		{"qualified", viewrename.DuckDB, `SELECT id, name FROM crm.accounts WHERE id > 1`, nil,
			`SELECT id, name FROM "sales"."customers" WHERE id > 1`, nil},
		{"quoted and catalog-qualified, same name", viewrename.DuckDB, `SELECT o.id FROM "floe"."crm"."orders" o`, nil,
			`SELECT o.id FROM "sales"."orders" o`, nil},
		{"default namespace", viewrename.DuckDB, `select count(*) from orders`, []string{"crm"},
			`select count(*) from "sales"."orders"`, nil},
		{"join, subquery, comment and spacing kept", viewrename.DuckDB,
			"SELECT a.id -- accounts\nFROM crm . accounts a\n  JOIN crm.orders AS o ON a.id = o.account_id\nWHERE a.id IN (SELECT account_id FROM crm.orders)", nil,
			"SELECT a.id -- accounts\nFROM \"sales\".\"customers\" a\n  JOIN \"sales\".\"orders\" AS o ON a.id = o.account_id\nWHERE a.id IN (SELECT account_id FROM \"sales\".\"orders\")", nil},
		{"column qualified by the table's name", viewrename.DuckDB, `SELECT accounts.id FROM crm.accounts`, nil,
			`SELECT accounts.id FROM "sales"."customers" AS "accounts"`, nil},
		{"a CTE is not a table", viewrename.DuckDB, `WITH accounts AS (SELECT * FROM crm.accounts) SELECT * FROM accounts`, nil,
			`WITH accounts AS (SELECT * FROM "sales"."customers") SELECT * FROM accounts`, nil},
		{"spark dialect", viewrename.Spark, "SELECT `id`, \"x\" AS k FROM crm.accounts WHERE region = 'eu'", nil,
			"SELECT `id`, \"x\" AS k FROM `sales`.`customers` WHERE region = 'eu'", nil},
		{"an unshared table", viewrename.DuckDB, `SELECT * FROM crm.accounts JOIN hr.payroll USING (id)`, nil, "", viewrename.ErrNotShared},
		{"an unshared table in a subquery", viewrename.DuckDB, `SELECT * FROM crm.orders WHERE id IN (SELECT id FROM crm.secrets)`, nil, "", viewrename.ErrNotShared},
		{"unqualified without a default", viewrename.DuckDB, `SELECT * FROM orders`, nil, "", viewrename.ErrNotShared},
		{"schema-qualified column", viewrename.DuckDB, `SELECT crm.accounts.id FROM crm.accounts`, nil, "", errInvalid},
		{"not a query", viewrename.DuckDB, `DROP TABLE crm.accounts`, nil, "", errInvalid},
		{"two statements", viewrename.DuckDB, `SELECT 1; SELECT 2`, nil, "", errInvalid},
		{"not SQL", viewrename.DuckDB, `SELEKT`, nil, "", errInvalid},
		{"spark backslash", viewrename.Spark, `SELECT 'a\'b' FROM crm.accounts`, nil, "", errInvalid},
		{"unknown dialect", "hive", `SELECT 1`, nil, "", errInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Rename(ctx, tt.query, tt.dialect, tt.defaultNS, shared)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("Rename: %v", err)
			case tt.err == nil && got != tt.want:
				t.Fatalf("Rename =\n%s\nwant\n%s", got, tt.want)
			case tt.err == errInvalid && floe.KindOf(err) != floe.Invalid:
				t.Fatalf("Rename = %q, %v; want Invalid", got, err)
			case tt.err != nil && tt.err != errInvalid && !errors.Is(err, tt.err):
				t.Fatalf("Rename = %q, %v; want %v", got, err, tt.err)
			}
		})
	}
}

var errInvalid = errors.New("invalid")

// FuzzRename: any text either fails cleanly or is rewritten into a query
// that reads only renamed tables (the rewrite is checked by reparsing, so
// a success must name only the new names).
func FuzzRename(f *testing.F) {
	for _, s := range []string{`SELECT * FROM crm.accounts`, "SELECT `a` FROM crm.orders o JOIN crm.accounts a ON o.x=a.y",
		`WITH x AS (SELECT 1) SELECT * FROM x, crm.orders`, `SELECT "a""b" FROM "crm"."accounts"`, `SELECT 'it''s' FROM crm.orders`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	r := viewrename.New()
	defer r.Close()
	f.Fuzz(func(t *testing.T, q string, spark bool) {
		d := viewrename.DuckDB
		if spark {
			d = viewrename.Spark
		}
		got, err := r.Rename(context.Background(), q, d, []string{"crm"}, shared)
		if err != nil {
			return
		}
		if strings.Contains(strings.ToLower(got), "crm.") || strings.Contains(strings.ToLower(got), `"crm"`) {
			// A success keeps crm only where it is not a table name (a
			// column or a string); check the rewritten query reads no
			// crm table by renaming it again with a renamer that refuses
			// everything but the new names.
			_, err := r.Rename(context.Background(), got, d, nil, func(ns []string, name string) (viewrename.Name, bool) {
				return viewrename.Name{Namespace: ns[0], Name: name}, len(ns) == 1 && ns[0] == "sales"
			})
			if errors.Is(err, viewrename.ErrNotShared) {
				t.Fatalf("the rewrite of %q still reads an unrenamed table: %q", q, got)
			}
		}
	})
}

// A Trino representation: names written in full with a catalog, checked
// on the tree like the others.
func TestRenameTrinoCatalog(t *testing.T) {
	r := viewrename.New()
	defer func() { _ = r.Close() }()
	for _, tc := range []struct{ query, want string }{
		{`SELECT a.id FROM crm.accounts a`, `SELECT a.id FROM "floe"."crm"."accounts" a`},
		{`SELECT id FROM "lake"."crm"."accounts" WHERE x = 'crm.accounts'`, `SELECT id FROM "floe"."crm"."accounts" WHERE x = 'crm.accounts'`},
		{`WITH c AS (SELECT 1 AS id) SELECT c.id FROM c JOIN crm.o ON c.id = o.id`, `WITH c AS (SELECT 1 AS id) SELECT c.id FROM c JOIN "floe"."crm"."o" ON c.id = o.id`},
	} {
		got, err := r.Rename(context.Background(), tc.query, viewrename.Trino, nil, func(ns []string, name string) (viewrename.Name, bool) {
			return viewrename.Name{Catalog: "floe", Namespace: ns[0], Name: name}, len(ns) == 1
		})
		if err != nil || got != tc.want {
			t.Errorf("Rename(%q) = %q, %v; want %q", tc.query, got, err, tc.want)
		}
	}
}

// FuzzSparkToDuckDB: the translation of untrusted Spark SQL's quoting
// keeps every position (same length) or refuses, and never panics.
func FuzzSparkToDuckDB(f *testing.F) {
	for _, s := range []string{"SELECT `a` FROM `c`.`n`.`t` WHERE x = \"s\"", `'it''s'`, "-- `c`\nSELECT 1", "/* ` */ `x`", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out, err := viewrename.SparkToDuckDB(q)
		if err != nil {
			return
		}
		if len(out) != len(q) {
			t.Fatalf("SparkToDuckDB(%q) = %q: length changed", q, out)
		}
	})
}
