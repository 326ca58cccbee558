package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// listRoom is the overlap collaboration under the list rule: the
// retailer lists its customers' segment and region, the advertiser its
// exposures' campaign, both matched on the e-mail address; an
// aggregation-rule table (orders) and a custom-rule table (loyalty) sit
// beside them.
func listRoom() *cleanroom.Room {
	return &cleanroom.Room{
		Collaboration: cleanroom.Collaboration{Name: "overlap", Tables: []cleanroom.ConfiguredTable{
			{Name: "customers", Owner: "retailer", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "customers",
				AnalysisRule: cleanroom.RuleList, Columns: []string{"segment", "region"}, JoinKeys: []string{"email"}, Identifier: "customer_id"},
			{Name: "exposures", Owner: "advertiser", Warehouse: "wh", Namespace: catalog.Namespace{"ads"}, Table: "exposures",
				AnalysisRule: cleanroom.RuleList, Columns: []string{"campaign"}, JoinKeys: []string{"email"}, Identifier: "user_id"},
			{Name: "visits", Owner: "retailer", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "visits",
				AnalysisRule: cleanroom.RuleList, Columns: []string{"store"}, JoinKeys: []string{"email"}},
			{Name: "orders", Owner: "retailer", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "orders",
				Columns: []string{"amount"}, JoinKeys: []string{"email"}, Dimensions: []string{"channel"}, Identifier: "customer_id",
				Rule: cleanroom.AggregationRule{MinIdentifiers: 3}},
			{Name: "loyalty", Owner: "retailer", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "loyalty",
				AnalysisRule: cleanroom.RuleCustom, Columns: []string{"tier"}, JoinKeys: []string{"email"}, Identifier: "customer_id"},
		}},
		Owners: map[string]authz.Subject{"retailer": {Principal: "retailer"}, "advertiser": {Principal: "advertiser"}},
	}
}

const listJoin = " FROM customers c JOIN exposures e ON c.email = e.email"

// TestListRuleRefusesAdversarialQueries: under the list rule a query
// outputs only list columns of rows matched across two members' tables:
// identifiers and join keys never leave, a single member's table alone is
// not a list, and the refusals of the aggregation rule hold (subqueries,
// CTEs, windows, set operations, time travel, other tables, functions,
// ordering on identifiers). Mixing rules, and reading a custom-rule table
// with a query of one's own, are refused.
func TestListRuleRefusesAdversarialQueries(t *testing.T) {
	d := newTreeDB(t)
	for _, tc := range []struct {
		name, sql, rule string
	}{
		{"raw identifier", "SELECT c.customer_id" + listJoin, ruleOutput},
		{"the other side's identifier", "SELECT e.user_id" + listJoin, ruleOutput},
		{"join key", "SELECT c.email" + listJoin, ruleOutput},
		{"join key through a function", "SELECT lower(c.email)" + listJoin, ruleOutput},
		{"join key through a cast", "SELECT CAST(e.email AS VARCHAR)" + listJoin, ruleOutput},
		{"star", "SELECT *" + listJoin, ruleOutput},
		{"table star", "SELECT c.*" + listJoin, ruleOutput},
		{"one member's table alone", "SELECT segment FROM customers", ruleJoin},
		{"one member's two tables", "SELECT c.segment FROM customers c JOIN visits v ON c.email = v.email", ruleJoin},
		{"self join", "SELECT a.segment FROM customers a JOIN customers b ON a.email = b.email", ruleJoin},
		{"aggregate", "SELECT count(*)" + listJoin, ruleFunction},
		{"aggregate of a list column", "SELECT c.segment, count(DISTINCT c.customer_id)" + listJoin + " GROUP BY c.segment", ruleGroup},
		{"GROUP BY", "SELECT c.segment" + listJoin + " GROUP BY c.segment", ruleGroup},
		{"string_agg of identifiers", "SELECT string_agg(CAST(c.customer_id AS VARCHAR), ',')" + listJoin, ruleFunction},
		{"function not allowed", "SELECT md5(c.segment)" + listJoin, ruleFunction},
		{"error() function", "SELECT error(c.segment)" + listJoin, ruleFunction},
		{"TRY_CAST", "SELECT TRY_CAST(c.segment AS INTEGER)" + listJoin, ruleFunction},
		{"CASE", "SELECT CASE WHEN c.customer_id = 42 THEN c.segment END" + listJoin, ruleOutput},
		{"subquery in FROM", "SELECT s.segment FROM (SELECT * FROM customers) s JOIN exposures e ON s.email = e.email", ruleStatement},
		{"subquery in WHERE", "SELECT c.segment" + listJoin + " WHERE c.segment IN (SELECT campaign FROM exposures)", ruleStatement},
		{"CTE", "WITH x AS (SELECT * FROM customers) SELECT x.segment FROM x JOIN exposures e ON x.email = e.email", ruleStatement},
		{"window function", "SELECT c.segment, row_number() OVER ()" + listJoin, ruleStatement},
		{"UNION", "SELECT c.segment" + listJoin + " UNION SELECT e.campaign" + listJoin, ruleStatement},
		{"time travel", "SELECT customers.segment FROM customers AT (VERSION => 1) JOIN exposures e ON customers.email = e.email", ruleTables},
		{"table not configured", "SELECT c.segment FROM customers c JOIN orders_raw o ON c.email = o.email", ruleTables},
		{"real name", "SELECT c.segment FROM retail.customers c JOIN exposures e ON c.email = e.email", ruleTables},
		{"table function", "SELECT c.segment FROM customers c JOIN read_parquet('/etc/passwd') p ON c.email = p.email", ruleTables},
		{"ORDER BY the identifier", "SELECT c.segment" + listJoin + " ORDER BY c.customer_id", ruleOutput},
		{"ORDER BY the identifier LIMIT 1", "SELECT c.segment" + listJoin + " ORDER BY e.user_id LIMIT 1", ruleOutput},
		{"ORDER BY a join key", "SELECT c.segment" + listJoin + " ORDER BY c.email", ruleOutput},
		{"LIMIT by expression", "SELECT c.segment" + listJoin + " LIMIT length('abc')", ruleOrder},
		{"DISTINCT ON the identifier", "SELECT DISTINCT ON (c.customer_id) c.segment" + listJoin, ruleStatement},
		{"WHERE on the identifier", "SELECT c.segment" + listJoin + " WHERE c.customer_id = 42", ruleWhere},
		{"WHERE on a join key (membership probe)", "SELECT c.segment" + listJoin + " WHERE c.email = 'victim@example.com'", ruleWhere},
		{"WHERE with LIKE", "SELECT c.segment" + listJoin + " WHERE e.campaign LIKE 's%'", ruleWhere},
		{"left join", "SELECT c.segment FROM customers c LEFT JOIN exposures e ON c.email = e.email", ruleJoin},
		{"cross join", "SELECT c.segment FROM customers c CROSS JOIN exposures e", ruleJoin},
		{"join on a list column", "SELECT c.segment FROM customers c JOIN exposures e ON c.segment = e.campaign", ruleJoin},
		{"join on identifiers", "SELECT c.segment FROM customers c JOIN exposures e ON c.customer_id = e.user_id", ruleJoin},
		{"mixed with an aggregation table", "SELECT c.segment FROM customers c JOIN orders o ON c.email = o.email", ruleTables},
		{"aggregation over a list table", "SELECT o.channel, count(*) FROM orders o JOIN exposures e ON o.email = e.email GROUP BY o.channel", ruleTables},
		{"raw query of a custom-rule table", "SELECT count(*) FROM loyalty", ruleTables},
		{"list query of a custom-rule table", "SELECT l.tier FROM loyalty l JOIN exposures e ON l.email = e.email", ruleTables},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkRoom(d.parse(t, tc.sql), listRoom())
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

// TestListRuleAcceptsOverlapLists: list queries within the rule pass and
// are rewritten onto the owners' tables without a threshold column (the
// list rule has none).
func TestListRuleAcceptsOverlapLists(t *testing.T) {
	d := newTreeDB(t)
	for _, tc := range []struct {
		name, sql string
		want      []string
	}{
		{"segments of exposed customers", "SELECT DISTINCT c.segment" + listJoin + " WHERE e.campaign = 'spring' ORDER BY c.segment",
			[]string{"wh.retail.customers AS c", "wh.ads.exposures AS e", "DISTINCT"}},
		{"pairs", "SELECT c.segment, e.campaign AS campaign" + listJoin + " ORDER BY campaign, 1 LIMIT 10", []string{"LIMIT 10"}},
		{"unqualified list columns, functions and literals", "SELECT upper(segment), coalesce(region, 'none'), 'x' AS tag, CAST(campaign AS VARCHAR)" + listJoin +
			" WHERE region IN ('EU', 'US') AND NOT campaign IS NULL", []string{"c.segment", "e.campaign"}},
		{"three tables", "SELECT DISTINCT v.store, e.campaign FROM visits v JOIN customers c ON v.email = c.email JOIN exposures e ON e.email = c.email", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt := d.parse(t, tc.sql)
			c, err := checkRoom(stmt, listRoom())
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			out := d.render(t, stmt)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rewritten:\n%s\nlacks %q", out, w)
				}
			}
			if strings.Contains(out, thresholdAlias) || c.hidden() != 0 || c.dp != nil {
				t.Errorf("a list query has hidden columns: %s", out)
			}
		})
	}
}
