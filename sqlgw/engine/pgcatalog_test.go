package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// jdbcColumnsSQL is the query pgjdbc 42.7.14's
// PgDatabaseMetaData.getColumns sends to a server of version 12 or later
// (taken from the driver's class file), with its three LIKE patterns as
// parameters: schema, table and column.
const jdbcColumnsSQL = "SELECT * FROM (SELECT current_database() AS current_database, n.nspname,c.relname,a.attname,a.atttypid," +
	"a.attnotnull  OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod," +
	"row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, " +
	"nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated," +
	"pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype " +
	" FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid) " +
	" JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) " +
	" LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum) " +
	" LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) " +
	" LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class') " +
	" LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog') " +
	" WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped" +
	" AND n.nspname LIKE $1 AND c.relname LIKE $2) c WHERE true  AND attname LIKE $3 ORDER BY nspname,c.relname,attnum"

// typeNamesSQL joins pg_attribute to pg_type and formats each column's
// type, as psql's \d and ODBC drivers do.
const typeNamesSQL = "SELECT a.attname, t.typname, pg_catalog.format_type(a.atttypid, a.atttypmod) " +
	"FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON a.attrelid = c.oid " +
	"JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid JOIN pg_catalog.pg_type t ON a.atttypid = t.oid " +
	"WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 ORDER BY a.attnum"

// jdbcColumn is the part of a getColumns row the tests compare.
type jdbcColumn struct {
	name    string
	typeOID int64
	notNull bool
	typmod  int64
	attnum  int64
}

func typedSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 5, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 6, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 8, Name: "born", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 9, Name: "seen", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 10, Name: "seen_tz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 11, Name: "raw", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 12, Name: "uid", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 13, Name: "tags", Type: &iceberg.ListType{ElementID: 15, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 14, Name: "attrs", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 16, Name: "k", Type: iceberg.PrimitiveTypes.String}}}},
	)
}

// TestCatalogColumns runs pgjdbc's DatabaseMetaData.getColumns query and a
// psql-style pg_attribute/pg_type join: every column of a Floe table is
// listed with the PostgreSQL type OID, name and typmod of its type.
func TestCatalogColumns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.f.App.Catalog().CreateNamespace(ctx, e.f.Warehouse, catalog.Namespace{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.App.Catalog().CreateTable(ctx, e.f.Warehouse, catalog.Namespace{"shop"},
		catalog.CreateTableRequest{Name: "things", Schema: typedSchema()}); err != nil {
		t.Fatal(err)
	}
	appendPeople(t, e.createPeople(t, "crm", "people"), people(2)...)
	e.createPeople(t, "crm", "persons")
	admin := e.admin(t)
	analystTok := e.f.PrincipalToken(t, "analyst")
	e.grant(t, "analyst", authz.Select, "crm", "people", &authz.DataFilter{ExcludeColumns: []string{"ssn"}})
	analyst := e.connect(t, "analyst", analystTok)

	// numeric(10,2) as PostgreSQL encodes it: ((10 << 16) | 2) + 4.
	const numeric10x2 = (10<<16 | 2) + 4
	people := []jdbcColumn{{"id", 20, true, -1, 1}, {"name", 1043, false, -1, 2}, {"region", 1043, false, -1, 3},
		{"ssn", 1043, false, -1, 4}, {"salary", 701, false, -1, 5}}
	for _, c := range []struct {
		name                  string
		as                    string
		schema, table, column string
		want                  []jdbcColumn
		wantTables            []string // relname of each row, when not all want's table
	}{
		{name: "all columns", as: "admin", schema: "crm", table: "people", column: "%", want: people},
		{name: "column pattern", as: "admin", schema: "crm", table: "people", column: "s%",
			want: []jdbcColumn{people[3], people[4]}},
		{name: "table pattern", as: "admin", schema: "crm", table: "pe%", column: "id",
			want: []jdbcColumn{people[0], people[0]}, wantTables: []string{"people", "persons"}},
		{name: "no such table", as: "admin", schema: "crm", table: "nobody", column: "%"},
		{name: "every type", as: "admin", schema: "shop", table: "things", column: "%", want: []jdbcColumn{
			{"id", 20, true, -1, 1}, {"name", 1043, false, -1, 2}, {"qty", 23, false, -1, 3},
			{"price", 1700, false, numeric10x2, 4}, {"ratio", 700, false, -1, 5}, {"score", 701, false, -1, 6},
			{"ok", 16, false, -1, 7}, {"born", 1082, false, -1, 8}, {"seen", 1114, false, -1, 9},
			{"seen_tz", 1184, false, -1, 10}, {"raw", 17, false, -1, 11}, {"uid", 2950, false, -1, 12},
			{"tags", 25, false, -1, 13}, {"attrs", 25, false, -1, 14},
		}},
		// A principal sees the columns it may read; attnum stays dense
		// (pgjdbc numbers the rows itself).
		{name: "column filter", as: "analyst", schema: "crm", table: "people", column: "%",
			want: []jdbcColumn{people[0], people[1], people[2], {"salary", 701, false, -1, 4}}},
		{name: "no grant", as: "analyst", schema: "crm", table: "persons", column: "%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := admin
			if c.as == "analyst" {
				conn = analyst
			}
			rows := mustRows(t, conn, jdbcColumnsSQL, c.schema, c.table, c.column)
			var got []jdbcColumn
			var tables []string
			for _, r := range rows {
				if len(r) != 16 {
					t.Fatalf("row of %d columns, want 16: %v", len(r), r)
				}
				if r[1] != c.schema {
					t.Errorf("nspname %v, want %s", r[1], c.schema)
				}
				tables = append(tables, fmt.Sprint(r[2]))
				got = append(got, jdbcColumn{name: fmt.Sprint(r[3]), typeOID: toInt(t, r[4]), notNull: r[5] == true,
					typmod: toInt(t, r[6]), attnum: toInt(t, r[9])})
				if r[10] != nil || r[11] != nil || r[12] != nil {
					t.Errorf("%v: attidentity %v, attgenerated %v, adsrc %v; want NULLs", r[3], r[10], r[11], r[12])
				}
				if r[15] != "b" {
					t.Errorf("%v: typtype %v, want b", r[3], r[15])
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("columns\n got %v\nwant %v", got, c.want)
			}
			wantTables := c.wantTables
			if wantTables == nil {
				for range c.want {
					wantTables = append(wantTables, c.table)
				}
			}
			if !slices.Equal(tables, wantTables) {
				t.Errorf("tables %v, want %v", tables, wantTables)
			}
		})
	}

	t.Run("type names", func(t *testing.T) {
		rows := mustRows(t, admin, typeNamesSQL, "shop", "things")
		// format_type gives PostgreSQL's SQL names, as PostgreSQL does
		// (SQLAlchemy maps them to types); pg_type keeps the short names.
		want := [][3]string{{"id", "int8", "bigint"}, {"name", "varchar", "character varying"}, {"qty", "int4", "integer"},
			{"price", "numeric", "numeric(10,2)"}, {"ratio", "float4", "real"}, {"score", "float8", "double precision"},
			{"ok", "bool", "boolean"}, {"born", "date", "date"}, {"seen", "timestamp", "timestamp without time zone"},
			{"seen_tz", "timestamptz", "timestamp with time zone"}, {"raw", "bytea", "bytea"}, {"uid", "uuid", "uuid"},
			{"tags", "text", "text"}, {"attrs", "text", "text"}}
		var got [][3]string
		for _, r := range rows {
			got = append(got, [3]string{fmt.Sprint(r[0]), fmt.Sprint(r[1]), fmt.Sprint(r[2])})
		}
		if !slices.Equal(got, want) {
			t.Errorf("type names\n got %v\nwant %v", got, want)
		}
	})
}

func toInt(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	}
	t.Fatalf("%v (%T) is not an integer", v, v)
	return 0
}
