package tpch_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	_ "github.com/duckdb/duckdb-go/v2" // the direct baseline
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// queries are TPC-H Q1 and Q6 with their validation parameters; TABLE
// stands for lineitem.
var queries = []struct{ name, sql string }{
	{"q1", `SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
	sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
	avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, count(*) AS count_order
FROM TABLE
WHERE l_shipdate <= CAST('1998-09-02' AS DATE)
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus`},
	{"q6", `SELECT sum(l_extendedprice * l_discount) AS revenue
FROM TABLE
WHERE l_shipdate >= CAST('1994-01-01' AS DATE) AND l_shipdate < CAST('1995-01-01' AS DATE)
	AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24`},
}

// BenchmarkTPCH times Q1 and Q6 through the SQL endpoint (pgx, text
// results read in full) and through a plain DuckDB connection reading the
// same Parquet file, with encryption at rest on (first run: the endpoint
// decrypts the file into memory; later runs: cached) and off. It runs its
// work once whatever b.N is; run it with -benchtime 1x.
func BenchmarkTPCH(b *testing.B) {
	sf := envFloat(b, "FLOE_TPCH_SF", 1)
	runs := int(envFloat(b, "FLOE_TPCH_RUNS", 7))
	dir := os.Getenv("FLOE_TPCH_DATA")
	if dir == "" {
		dir = b.TempDir()
	}
	file := filepath.Join(dir, fmt.Sprintf("lineitem-sf%g.parquet", sf))
	cols := generate(b, file, sf)

	direct, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	direct.SetMaxOpenConns(1)
	// The same per-query settings as an endpoint session.
	if _, err := direct.Exec("SET memory_limit = '" + app.Defaults().SQLMemoryLimit + "'"); err != nil {
		b.Fatal(err)
	}

	// Figures are the fastest of the runs (the least disturbed by other
	// work on the machine) and, in the log, the medians.
	type figures struct{ cold, warm, direct, warmMedian, directMedian time.Duration }
	results := map[string]figures{}
	for _, enc := range []bool{true, false} {
		mode := "plain"
		if enc {
			mode = "encrypted"
		}
		f := testkit.Start(b, func(c *app.Config) { c.Encryption = enc })
		load(b, f, file, cols)
		conn, err := pgx.Connect(context.Background(), "postgres://admin:"+f.Token(b)+"@"+f.SQLAddr+"/floe?sslmode=disable&default_query_exec_mode=simple_protocol")
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range queries {
			endpointSQL := strings.ReplaceAll(q.sql, "TABLE", "tpch.lineitem")
			directSQL := strings.ReplaceAll(q.sql, "TABLE", "read_parquet('"+file+"')")
			cold, want := timeEndpoint(b, conn, endpointSQL)
			// The same answer both ways, every value rendered by DuckDB.
			asText := func(q string) string { return "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (" + q + ") AS r" }
			_, viaEndpoint := timeEndpoint(b, conn, asText(endpointSQL))
			_, viaDirect := timeDirect(b, direct, asText(directSQL))
			if !slices.Equal(viaEndpoint, viaDirect) {
				b.Fatalf("%s: the endpoint answers %q, DuckDB on the file %q", q.name, viaEndpoint, viaDirect)
			}
			var warm, dir []time.Duration
			for range runs {
				d, got := timeEndpoint(b, conn, endpointSQL)
				if !slices.Equal(got, want) {
					b.Fatalf("%s: the endpoint's answers differ between runs", q.name)
				}
				warm = append(warm, d)
				d, got = timeDirect(b, direct, directSQL)
				if len(got) != len(want) {
					b.Fatalf("%s: %d rows through the endpoint, %d directly", q.name, len(want), len(got))
				}
				dir = append(dir, d)
			}
			results[q.name+"-"+mode] = figures{cold: cold, warm: slices.Min(warm), direct: slices.Min(dir), warmMedian: median(warm), directMedian: median(dir)}
		}
		_ = conn.Close(context.Background())
	}
	b.StopTimer()
	for _, q := range queries {
		for _, mode := range []string{"encrypted", "plain"} {
			r := results[q.name+"-"+mode]
			b.Logf("%s %-9s endpoint first %7.1f ms, warm %7.1f ms (median %7.1f); direct %7.1f ms (median %7.1f); warm/direct %.2f (medians %.2f), first/direct %.2f",
				q.name, mode, ms(r.cold), ms(r.warm), ms(r.warmMedian), ms(r.direct), ms(r.directMedian),
				ms(r.warm)/ms(r.direct), ms(r.warmMedian)/ms(r.directMedian), ms(r.cold)/ms(r.direct))
			b.ReportMetric(ms(r.warm)/ms(r.direct), q.name+"-"+mode+"-warm/direct")
			b.ReportMetric(ms(r.cold)/ms(r.direct), q.name+"-"+mode+"-first/direct")
			b.ReportMetric(ms(r.warm), q.name+"-"+mode+"-warm-ms")
			b.ReportMetric(ms(r.direct), q.name+"-"+mode+"-direct-ms")
		}
	}
}

// generate writes TPC-H lineitem at scale factor sf to file with DuckDB's
// bundled dbgen (unless the file exists) and returns its columns as
// DuckDB describes them.
func generate(b *testing.B, file string, sf float64) [][2]string {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := os.Stat(file); err != nil {
		start := time.Now()
		if _, err := db.Exec(fmt.Sprintf("CALL dbgen(sf=%g)", sf)); err != nil {
			b.Fatalf("dbgen: %v", err)
		}
		cols := describe(b, db, "lineitem")
		ids := make([]string, len(cols))
		for i, c := range cols {
			ids[i] = fmt.Sprintf("%s: %d", c[0], i+1)
		}
		tmp := file + ".tmp"
		if _, err := db.Exec(fmt.Sprintf("COPY lineitem TO '%s' (FORMAT parquet, FIELD_IDS {%s})", tmp, strings.Join(ids, ", "))); err != nil {
			b.Fatalf("write lineitem: %v", err)
		}
		if err := os.Rename(tmp, file); err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %s in %s", file, time.Since(start).Round(time.Second))
	}
	return describe(b, db, "read_parquet('"+file+"')")
}

func describe(b *testing.B, db *sql.DB, from string) [][2]string {
	rows, err := db.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM " + from + ")")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var c [2]string
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			b.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// load creates table tpch.lineitem with field ids 1..n in column order,
// stores the file as one object of its warehouse (encrypted at rest if the
// server encrypts) and adds it to the table.
func load(b *testing.B, f *testkit.Floe, file string, cols [][2]string) {
	ctx := context.Background()
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		t, err := icebergType(c[1])
		if err != nil {
			b.Fatal(err)
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c[0], Type: t}
	}
	cat := f.App.Catalog()
	ns := catalog.Namespace{"tpch"}
	if err := cat.CreateNamespace(ctx, f.Warehouse, ns, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, f.Warehouse, ns, catalog.CreateTableRequest{Name: "lineitem", Schema: iceberg.NewSchema(0, fields...)}); err != nil {
		b.Fatal(err)
	}
	lk := lake.New(cat, lake.NewBucketFS(f.App.Objects()), lake.Options{})
	id := catalog.Ident{Namespace: ns, Name: "lineitem"}
	tbl, err := lk.LoadTable(ctx, f.Warehouse, id)
	if err != nil {
		b.Fatal(err)
	}
	bk, prefix, err := objstore.ParseLocation(tbl.Location())
	if err != nil {
		b.Fatal(err)
	}
	key := strings.TrimSuffix(prefix, "/") + "/data/lineitem.parquet"
	r, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.App.Objects().Put(ctx, bk, key, r, bucket.PutOptions{Size: st.Size()}); err != nil {
		b.Fatal(err)
	}
	svc := ingest.New(cat, lk, ingest.Options{TempDir: b.TempDir()})
	if _, err := svc.AddFiles(ctx, ingest.AddFilesRequest{Warehouse: f.Warehouse, Table: id, Paths: []string{"s3://" + bk + "/" + key}}); err != nil {
		b.Fatal(err)
	}
}

// icebergType maps the DuckDB types of lineitem to Iceberg types.
func icebergType(t string) (iceberg.Type, error) {
	switch {
	case t == "BIGINT":
		return iceberg.PrimitiveTypes.Int64, nil
	case t == "INTEGER":
		return iceberg.PrimitiveTypes.Int32, nil
	case t == "VARCHAR":
		return iceberg.PrimitiveTypes.String, nil
	case t == "DATE":
		return iceberg.PrimitiveTypes.Date, nil
	case t == "DOUBLE":
		return iceberg.PrimitiveTypes.Float64, nil
	case strings.HasPrefix(t, "DECIMAL("):
		var p, s int
		if _, err := fmt.Sscanf(t, "DECIMAL(%d,%d)", &p, &s); err != nil {
			return nil, err
		}
		return iceberg.DecimalTypeOf(p, s), nil
	}
	return nil, fmt.Errorf("no Iceberg type for DuckDB type %s", t)
}

// timeEndpoint runs a query through the endpoint, reads every value as
// text and returns the time taken and the rows.
func timeEndpoint(b *testing.B, conn *pgx.Conn, q string) (time.Duration, []string) {
	start := time.Now()
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var row []string
		for _, v := range rows.RawValues() {
			row = append(row, string(v))
		}
		out = append(out, strings.Join(row, "|"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), out
}

// timeDirect runs a query on the direct DuckDB connection, reading every
// value.
func timeDirect(b *testing.B, db *sql.DB, q string) (time.Duration, []string) {
	start := time.Now()
	rows, err := db.Query(q)
	if err != nil {
		b.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			b.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(row, "|"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func envFloat(b *testing.B, name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return f
}
