package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// treeDB parses and renders SQL with DuckDB, as a session does.
type treeDB struct{ db *sql.DB }

func newTreeDB(t testing.TB) *treeDB {
	t.Helper()
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return &treeDB{db: db}
}

func (d *treeDB) parse(t testing.TB, q string) node {
	t.Helper()
	var js string
	if err := d.db.QueryRow("SELECT CAST(json_serialize_sql($1::VARCHAR) AS VARCHAR)", q).Scan(&js); err != nil {
		t.Fatal(err)
	}
	var out serialized
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatal(err)
	}
	if out.Error || len(out.Statements) != 1 {
		t.Fatalf("%s: does not parse: %s", q, out.ErrorMessage)
	}
	var n node
	if err := unmarshalTree(out.Statements[0], &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (d *treeDB) render(t testing.TB, stmt node) string {
	t.Helper()
	js, err := json.Marshal(map[string]any{"error": false, "statements": []any{stmt}})
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := d.db.QueryRow("SELECT json_deserialize_sql($1::JSON)", string(js)).Scan(&s); err != nil {
		t.Fatalf("the rewritten tree does not render: %v", err)
	}
	return s
}

// overlapRoom is the documented collaboration: the retailer's customers
// and the advertiser's exposures, joined on a hashed e-mail address.
func overlapRoom() *cleanroom.Room {
	return &cleanroom.Room{
		Collaboration: cleanroom.Collaboration{Name: "overlap", Tables: []cleanroom.ConfiguredTable{
			{Name: "customers", Owner: "retailer", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "customers",
				Columns: []string{"ltv"}, JoinKeys: []string{"email"}, Dimensions: []string{"segment", "region"}, Identifier: "customer_id",
				Rule: cleanroom.AggregationRule{MinIdentifiers: 3}},
			{Name: "exposures", Owner: "advertiser", Warehouse: "wh", Namespace: catalog.Namespace{"ads"}, Table: "exposures",
				Columns: []string{"spend"}, JoinKeys: []string{"email"}, Dimensions: []string{"campaign"}, Identifier: "user_id",
				Rule: cleanroom.AggregationRule{MinIdentifiers: 5}},
		}},
		Owners: map[string]authz.Subject{"retailer": {Principal: "retailer"}, "advertiser": {Principal: "advertiser"}},
	}
}

var quoted = regexp.MustCompile(`'([^']*)'`)

// TestRoomRefusesAdversarialQueries: every query that could read rows,
// identifiers or tables outside the rules is refused with SQLSTATE 42501
// naming the rule, before anything runs, and the message quotes no value
// the query holds.
func TestRoomRefusesAdversarialQueries(t *testing.T) {
	d := newTreeDB(t)
	for _, tc := range []struct {
		name, sql, rule string
	}{
		{"select star", "SELECT * FROM customers", ruleOutput},
		{"star beside an aggregate", "SELECT *, count(*) FROM customers", ruleOutput},
		{"raw identifier", "SELECT customer_id FROM customers", ruleOutput},
		{"raw identifier grouped", "SELECT customer_id, count(*) FROM customers GROUP BY customer_id", ruleGroup},
		{"join key as a group", "SELECT c.email, count(*) FROM customers c GROUP BY c.email", ruleGroup},
		{"raw measure", "SELECT ltv, count(*) FROM customers GROUP BY segment", ruleOutput},
		{"no aggregate", "SELECT segment FROM customers GROUP BY segment", ruleOutput},
		{"dimension not grouped", "SELECT segment, count(*) FROM customers", ruleOutput},
		{"join on a dimension", "SELECT count(*) FROM customers c JOIN exposures e ON c.segment = e.campaign", ruleJoin},
		{"join on a non-allowed column", "SELECT count(*) FROM customers c JOIN exposures e ON c.customer_id = e.user_id", ruleJoin},
		{"join with OR", "SELECT count(*) FROM customers c JOIN exposures e ON c.email = e.email OR c.region = 'EU'", ruleJoin},
		{"join key against a literal", "SELECT count(*) FROM customers c JOIN exposures e ON c.email = 'a@b.c'", ruleJoin},
		{"left join", "SELECT count(*) FROM customers c LEFT JOIN exposures e ON c.email = e.email", ruleJoin},
		{"cross join", "SELECT count(*) FROM customers c CROSS JOIN exposures e", ruleJoin},
		{"comma join", "SELECT count(*) FROM customers c, exposures e WHERE c.email = e.email", ruleJoin},
		{"join using", "SELECT count(*) FROM customers c JOIN exposures e USING (email)", ruleJoin},
		{"subquery in FROM", "SELECT count(*) FROM (SELECT * FROM customers) s", ruleStatement},
		{"subquery in WHERE", "SELECT count(*) FROM customers WHERE segment IN (SELECT campaign FROM exposures)", ruleStatement},
		{"scalar subquery output", "SELECT (SELECT max(customer_id) FROM customers), count(*) FROM customers", ruleStatement},
		{"CTE", "WITH x AS (SELECT * FROM customers) SELECT count(*) FROM x", ruleStatement},
		{"window function", "SELECT count(*) OVER () FROM customers", ruleStatement},
		{"window over groups", "SELECT segment, count(*), row_number() OVER (ORDER BY segment) FROM customers GROUP BY segment", ruleStatement},
		{"UNION", "SELECT count(*) FROM customers UNION SELECT count(*) FROM exposures", ruleStatement},
		{"INTERSECT", "SELECT count(*) FROM customers INTERSECT SELECT count(*) FROM exposures", ruleStatement},
		{"EXCEPT", "SELECT count(*) FROM customers EXCEPT SELECT count(*) FROM exposures", ruleStatement},
		{"ORDER BY id LIMIT 1", "SELECT segment, count(*) FROM customers GROUP BY segment ORDER BY customer_id LIMIT 1", ruleOutput},
		{"ORDER BY an identifier", "SELECT segment, count(*) FROM customers GROUP BY segment ORDER BY customer_id", ruleOutput},
		{"LIMIT", "SELECT segment, count(*) FROM customers GROUP BY segment LIMIT 1", ruleOrder},
		{"OFFSET", "SELECT segment, count(*) FROM customers GROUP BY segment OFFSET 1", ruleOrder},
		{"DISTINCT", "SELECT DISTINCT segment, count(*) FROM customers GROUP BY segment", ruleStatement},
		{"time travel", "SELECT count(*) FROM customers AT (VERSION => 1)", ruleTables},
		{"time travel by timestamp", "SELECT count(*) FROM customers AT (TIMESTAMP => '2020-01-01')", ruleTables},
		{"table not configured", "SELECT count(*) FROM orders", ruleTables},
		{"the owner's table by its real name", "SELECT count(*) FROM retail.customers", ruleTables},
		{"three-part name", "SELECT count(*) FROM wh.retail.customers", ruleTables},
		{"table function", "SELECT count(*) FROM read_parquet('/etc/passwd')", ruleTables},
		{"range", "SELECT count(*) FROM range(10)", ruleTables},
		{"system catalog", "SELECT count(*) FROM pg_catalog.pg_class", ruleTables},
		{"function not allowed: max", "SELECT max(customer_id) FROM customers", ruleFunction},
		{"function not allowed: min of a dimension", "SELECT min(segment) FROM customers", ruleFunction},
		{"function not allowed: string_agg", "SELECT string_agg(email, '-sep-') FROM customers", ruleFunction},
		{"function not allowed: list", "SELECT list(customer_id) FROM customers", ruleFunction},
		{"function not allowed: any_value", "SELECT any_value(email) FROM customers", ruleFunction},
		{"function in WHERE", "SELECT count(*) FROM customers WHERE md5(segment) = 'x'", ruleWhere},
		{"LIKE", "SELECT count(*) FROM customers WHERE segment LIKE 'g%'", ruleWhere},
		{"expression inside an aggregate", "SELECT sum(CASE WHEN customer_id = 42 THEN ltv ELSE 0 END) FROM customers", ruleFunction},
		{"arithmetic inside an aggregate", "SELECT sum(ltv * 0 + customer_id) FROM customers", ruleFunction},
		{"sum of the identifier", "SELECT sum(customer_id) FROM customers", ruleFunction},
		{"avg of a join key", "SELECT avg(email) FROM customers", ruleFunction},
		{"sum of a dimension", "SELECT sum(region) FROM customers", ruleFunction},
		{"aggregate FILTER", "SELECT count(*) FILTER (WHERE customer_id = 42) FROM customers", ruleFunction},
		{"WHERE on the identifier", "SELECT count(*) FROM customers WHERE customer_id = 42", ruleWhere},
		{"WHERE on a join key with a value", "SELECT count(*) FROM customers WHERE email = 'victim@example.com'", ruleWhere},
		{"WHERE on a measure", "SELECT count(*) FROM customers WHERE ltv > 1000", ruleWhere},
		{"WHERE column against column", "SELECT count(*) FROM customers WHERE segment = region", ruleWhere},
		{"WHERE with a cast of a column (error would quote values)", "SELECT count(*) FROM customers WHERE CAST(segment AS INTEGER) = 1", ruleWhere},
		{"CASE output (error would quote values)", "SELECT CAST(CASE WHEN count(*) > 0 THEN 'not-a-number' END AS INTEGER) FROM customers", ruleOutput},
		{"error() function", "SELECT count(*), error(any_value(email)) FROM customers", ruleFunction},
		{"TRY_CAST", "SELECT TRY_CAST(count(*) AS VARCHAR) FROM customers", ruleFunction},
		{"GROUP BY ALL", "SELECT segment, count(*) FROM customers GROUP BY ALL", ruleGroup},
		{"ROLLUP", "SELECT segment, region, count(*) FROM customers GROUP BY ROLLUP (segment, region)", ruleGroup},
		{"GROUP BY an expression", "SELECT count(*) FROM customers GROUP BY length(segment)", ruleGroup},
		{"HAVING on a raw value", "SELECT segment, count(*) FROM customers GROUP BY segment HAVING max(customer_id) > 5", ruleFunction},
		{"QUALIFY", "SELECT segment, count(*) FROM customers GROUP BY segment QUALIFY count(*) > 1", ruleStatement},
		{"SAMPLE", "SELECT count(*) FROM customers USING SAMPLE 10", ruleStatement},
		{"column not allowed", "SELECT count(DISTINCT phone) FROM customers", ruleOutput},
		{"unknown alias", "SELECT count(x.segment) FROM customers c", ruleTables},
		{"struct path", "SELECT count(c.segment.x) FROM customers c", ruleOutput},
		{"ambiguous column", "SELECT count(email) FROM customers c JOIN exposures e ON c.email = e.email", ruleOutput},
		{"same alias twice", "SELECT count(*) FROM customers x JOIN exposures x ON x.email = x.email", ruleTables},
		{"no FROM", "SELECT 1", ruleTables},
		{"VALUES", "SELECT count(*) FROM (VALUES (1)) v(a)", ruleStatement},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkRoom(d.parse(t, tc.sql), overlapRoom())
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != pgwire.CodeInsufficientPrivilege {
				t.Fatalf("%s: %v, want SQLSTATE 42501", tc.sql, err)
			}
			if !strings.Contains(pe.Message, "clean room rule ("+tc.rule+")") {
				t.Errorf("%s: %q does not name the rule %q", tc.sql, pe.Message, tc.rule)
			}
			for _, m := range quoted.FindAllStringSubmatch(tc.sql, -1) {
				if len(m[1]) > 2 && strings.Contains(pe.Message+pe.Hint, m[1]) {
					t.Errorf("%s: the error quotes the value %q: %s", tc.sql, m[1], pe.Message)
				}
			}
		})
	}
}

// TestRoomAcceptsAggregations: aggregation queries within the rules pass,
// and the rewrite reads the owners' tables and appends the threshold test
// of every table the query names (each table's own N).
func TestRoomAcceptsAggregations(t *testing.T) {
	d := newTreeDB(t)
	for _, tc := range []struct {
		name, sql string
		want      []string // in the rewritten SQL
	}{
		{"overlap by segment and campaign",
			"SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) AS customers FROM customers c JOIN exposures e ON c.email = e.email GROUP BY c.segment, e.campaign ORDER BY 1, 2",
			[]string{"wh.retail.customers AS c", "wh.ads.exposures AS e", "(count(DISTINCT c.customer_id) >= 3)", "(count(DISTINCT e.user_id) >= 5)", "AS __floe_threshold"}},
		{"one table, positions, HAVING, IN",
			"SELECT segment, count(*) AS n, avg(ltv) FROM customers WHERE region IN ('EU', 'US') GROUP BY 1 HAVING count(*) > 10 ORDER BY n DESC",
			[]string{"customers.segment", "(count(DISTINCT customers.customer_id) >= 3) AS __floe_threshold"}},
		{"global count", "SELECT count(*) FROM customers", []string{"count_star()", "(count(DISTINCT customers.customer_id) >= 3)"}},
		{"arithmetic of aggregates, filters",
			"SELECT round(sum(e.spend) / count(*), 2) AS spend_per_customer FROM customers c JOIN exposures e ON e.email = c.email WHERE c.region = 'EU' AND NOT c.segment IS NULL AND e.campaign BETWEEN 'a' AND 'm'",
			[]string{"round("}},
		{"count of a join key and a cast", "SELECT CAST(count(DISTINCT c.email) AS DOUBLE) FROM customers c WHERE c.segment <> 'x' OR c.segment IS NULL", nil},
		{"upper-case names", "SELECT C.SEGMENT, COUNT(*) FROM CUSTOMERS C GROUP BY C.SEGMENT", []string{"wh.retail.customers AS c"}},
		{"parameters as literals", "SELECT count(*) FROM customers WHERE segment = $1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt := d.parse(t, tc.sql)
			c, err := checkRoom(stmt, overlapRoom())
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			out := d.render(t, stmt)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rewritten:\n%s\nlacks %q", out, w)
				}
			}
			if !strings.HasSuffix(strings.SplitN(out, " FROM ", 2)[0], "AS __floe_threshold") {
				t.Errorf("the threshold is not the last output: %s", out)
			}
			if got := len(c.definers()); got != len(c.tables) || got == 0 {
				t.Errorf("%d tables read with their owners' rights, want %d", got, len(c.tables))
			}
		})
	}
}

// TestRoomRewriteRunsAndSuppresses runs a rewritten query on DuckDB over
// stand-ins of the owners' tables: groups with fewer distinct identifiers
// than N fail the threshold column.
func TestRoomRewriteRunsAndSuppresses(t *testing.T) {
	d := newTreeDB(t)
	ctx := context.Background()
	for _, q := range []string{
		"ATTACH ':memory:' AS wh",
		"CREATE SCHEMA wh.retail", "CREATE SCHEMA wh.ads",
		// gold: 4 customers, silver: 2 (below 3).
		"CREATE TABLE wh.retail.customers AS SELECT * FROM (VALUES (1, 'a', 'gold', 'EU', 1.0), (2, 'b', 'gold', 'EU', 1.0), (3, 'c', 'gold', 'EU', 1.0), (4, 'd', 'gold', 'EU', 1.0), (5, 'e', 'silver', 'EU', 1.0), (6, 'f', 'silver', 'EU', 1.0)) t(customer_id, email, segment, region, ltv)",
		"CREATE TABLE wh.ads.exposures AS SELECT i AS user_id, e AS email, 'spring' AS campaign, 1.0 AS spend FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')) t(i, e)",
	} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	room := overlapRoom()
	room.Collaboration.Tables[1].Rule.MinIdentifiers = 2
	stmt := d.parse(t, "SELECT c.segment, count(*) FROM customers c JOIN exposures e ON c.email = e.email GROUP BY c.segment ORDER BY 1")
	if _, err := checkRoom(stmt, room); err != nil {
		t.Fatal(err)
	}
	rows, err := d.db.QueryContext(ctx, d.render(t, stmt))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type row struct {
		segment string
		n       int64
		ok      bool
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.segment, &r.n, &r.ok); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []row{{"gold", 4, true}, {"silver", 2, false}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
}
