package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

func TestParseDDL(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		check func(*ddlParsed) bool
	}{
		{"CREATE SCHEMA IF NOT EXISTS sales", func(d *ddlParsed) bool {
			return d.kind == ddlCreateSchema && d.ifExists && d.path[0] == "sales"
		}},
		{`create schema "Mixed Case" with (location = 's3://b/x')`, func(d *ddlParsed) bool {
			return d.path[0] == "Mixed Case" && d.props["location"] == "s3://b/x"
		}},
		{"DROP SCHEMA IF EXISTS floe.sales RESTRICT;", func(d *ddlParsed) bool {
			return d.kind == ddlDropSchema && d.ifExists && len(d.path) == 2 && !d.cascade
		}},
		{"CREATE TABLE s.t (a INT NOT NULL, b character varying(10) NULL, c double precision, d timestamp(6) with time zone, e numeric(5), f time without time zone)",
			func(d *ddlParsed) bool {
				return len(d.cols) == 6 && d.cols[0].required && d.cols[1].typ.Equals(iceberg.PrimitiveTypes.String) &&
					d.cols[2].typ.Equals(iceberg.PrimitiveTypes.Float64) && d.cols[3].typ.Equals(iceberg.PrimitiveTypes.TimestampTz) &&
					d.cols[4].typ.Equals(iceberg.DecimalTypeOf(5, 0)) && d.cols[5].typ.Equals(iceberg.PrimitiveTypes.Time)
			}},
		{"CREATE TABLE s.t (a int, ts timestamp) PARTITIONED BY (a, bucket(a, 8) AS ab, hour(ts)) WITH (k = 1, 'x.y' = 'z')",
			func(d *ddlParsed) bool {
				return len(d.parts) == 3 && d.parts[1].transform.Equals(iceberg.BucketTransform{NumBuckets: 8}) && d.parts[1].name == "ab" &&
					d.parts[2].transform.Equals(iceberg.HourTransform{}) && d.props["k"] == "1" && d.props["x.y"] == "z"
			}},
		{"CREATE OR REPLACE TABLE s.t (x, y) AS WITH q AS (SELECT 1 a, 2 b) SELECT * FROM q;", func(d *ddlParsed) bool {
			return d.orReplace && len(d.colNames) == 2 && d.query == "WITH q AS (SELECT 1 a, 2 b) SELECT * FROM q"
		}},
		{"DROP TABLE s.t PURGE", func(d *ddlParsed) bool { return d.kind == ddlDropTable && d.purge }},
		{"ALTER TABLE s.t ALTER COLUMN c SET DATA TYPE bigint", func(d *ddlParsed) bool {
			return d.alter == alterColumnType && d.col == "c" && d.cols[0].typ.Equals(iceberg.PrimitiveTypes.Int64)
		}},
		{"ALTER TABLE s.t RENAME TO u", func(d *ddlParsed) bool { return d.alter == alterRename && d.newPath[0] == "u" }},
		{"ALTER TABLE s.t RENAME c TO d", func(d *ddlParsed) bool { return d.alter == alterRenameColumn && d.col == "c" && d.newName == "d" }},
		{"ALTER TABLE s.t DROP PARTITION FIELD ab", func(d *ddlParsed) bool { return d.alter == alterDropPartition && d.partName == "ab" }},
		{"ALTER TABLE s.t DROP PARTITION FIELD day(ts)", func(d *ddlParsed) bool {
			return d.alter == alterDropPartition && d.parts[0].transform.Equals(iceberg.DayTransform{})
		}},
		{"ALTER TABLE s.t UNSET TBLPROPERTIES ('a', b.c)", func(d *ddlParsed) bool {
			return d.alter == alterResetProps && strings.Join(d.keys, ",") == "a,b.c"
		}},
		{"TRUNCATE TABLE s.t", func(d *ddlParsed) bool { return d.kind == ddlTruncate }},
		{"COMMENT ON COLUMN floe.s.t.c IS $$it's$$", func(d *ddlParsed) bool {
			return d.commentsCol && d.col == "c" && len(d.path) == 3 && *d.comment == "it's"
		}},
		{"COMMENT ON TABLE s.t IS NULL", func(d *ddlParsed) bool { return d.comment == nil && !d.commentsCol }},
		{"CREATE VIEW s.v SECURITY DEFINER AS SELECT 1 AS a", func(d *ddlParsed) bool {
			return d.kind == ddlCreateView && d.security == securityDefiner && d.query == "SELECT 1 AS a"
		}},
		{"create or replace view s.v security invoker as (select 1 as a)", func(d *ddlParsed) bool {
			return d.orReplace && d.security == securityInvoker && d.query == "(select 1 as a)"
		}},
		{"CREATE VIEW s.v AS SELECT 1 AS security", func(d *ddlParsed) bool { return d.security == "" }},
	} {
		d, err := parseDDL(tc.sql)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if !tc.check(d) {
			t.Errorf("%s: parsed %+v", tc.sql, d)
		}
	}
	for _, tc := range []struct{ sql, code string }{
		{"CREATE TABLE s.t (a blob_of_doom)", "42704"},
		{"CREATE TABLE s.t (a jsonb)", "0A000"},
		{"CREATE TABLE a.b.c.d (x int)", "42601"},
		{"CREATE TABLE s.t (a int) AS SELECT 1", "42601"},
		{"CREATE TABLE s.t AS DELETE FROM x", "42601"},
		{"CREATE TABLE s.t (x) AS SELECT 1; DROP TABLE s.u", "42601"},
		{"DROP TABLE s.t, s.u", "0A000"},
		{"CREATE INDEX i ON s.t (a)", "0A000"},
		{"ALTER TABLE s.t ALTER COLUMN c SET NOT NULL", "0A000"},
		{"ALTER TABLE s.t ALTER COLUMN c TYPE bigint USING c::bigint", "0A000"},
		{"CREATE TABLE s.t (a int) PARTITIONED BY (bucket(0, a))", "42601"},
		{"CREATE TABLE s.t (a int) PARTITIONED BY (zorder(a))", "0A000"},
		{"COMMENT ON TABLE s.t IS 5", "42601"},
		{"CREATE TABLE s.t (a numeric(3, 4))", "42601"},
		{"CREATE VIEW s.v SECURITY OWNER AS SELECT 1", "42601"},
		{"CREATE VIEW s.v SECURITY AS SELECT 1", "42601"},
	} {
		_, err := parseDDL(tc.sql)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: error %v, want SQLSTATE %s", tc.sql, err, tc.code)
		}
	}
}

// FuzzParseDDL: parseDDL takes client input; it must not panic, must
// report errors as *pgwire.Error, must return names for what it changes,
// and the one part it passes on as text (the query of CREATE TABLE ...
// AS) must be balanced text of the statement holding no other statement.
func FuzzParseDDL(f *testing.F) {
	for _, s := range []string{
		"CREATE SCHEMA IF NOT EXISTS a WITH (k = 'v')",
		"CREATE OR REPLACE TABLE a.b (x int NOT NULL COMMENT 'c', y numeric(10,2)) PARTITIONED BY (bucket(4, x), day(y) AS d) WITH ('p' = 'q')",
		"CREATE TABLE a.b AS SELECT $tag$ ) $tag$ AS x /* ( */",
		"ALTER TABLE a.b ADD PARTITION FIELD truncate(x, 3)",
		"ALTER TABLE IF EXISTS a.b SET TBLPROPERTIES ('a' = 1)",
		"COMMENT ON COLUMN a.b.c IS 'x''y'",
		"DROP TABLE IF EXISTS floe.a.b PURGE",
		"CREATE OR REPLACE VIEW a.v AS (SELECT 1 AS x)",
		"CREATE VIEW a.v SECURITY DEFINER AS SELECT 1",
		"ALTER VIEW IF EXISTS a.v RENAME TO w",
		"DROP VIEW IF EXISTS floe.a.v CASCADE",
		`CREATE TEMPORARY TABLE "t" AS (SELECT * FROM a.b)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		d, err := parseDDL(sql)
		if err != nil {
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code == "" {
				t.Fatalf("error %T %v is not a *pgwire.Error with a SQLSTATE", err, err)
			}
			return
		}
		if len(d.path) == 0 || len(d.path) > 3 {
			t.Fatalf("name %q", d.path)
		}
		for _, p := range d.path {
			if p == "" {
				t.Fatalf("empty name part in %q", d.path)
			}
		}
		for _, c := range d.cols {
			if c.typ == nil || c.name == "" {
				t.Fatalf("column %+v", c)
			}
		}
		if d.query == "" {
			return
		}
		if !strings.Contains(sql, d.query) {
			t.Fatalf("query %q is not text of the statement", d.query)
		}
		toks, err := lexSQL(d.query)
		if err != nil {
			t.Fatalf("query %q does not lex: %v", d.query, err)
		}
		depth := 0
		for _, tk := range toks {
			switch {
			case tk.kind == tokPunct && strings.ContainsAny(tk.text, "([{"):
				depth++
			case tk.kind == tokPunct && strings.ContainsAny(tk.text, ")]}"):
				depth--
			}
			if depth < 0 || tk.text == ";" {
				t.Fatalf("query %q is not balanced or holds another statement", d.query)
			}
		}
		if depth != 0 {
			t.Fatalf("query %q is not balanced", d.query)
		}
	})
}
