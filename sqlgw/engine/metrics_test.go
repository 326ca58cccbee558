package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/products"
)

// publishStaff publishes the product staff over crm.people: a metric
// payroll (sum of salaries above 1000) by region or name.
func publishStaff(t testing.TB, e *env) {
	t.Helper()
	p := products.Product{Warehouse: e.f.Warehouse, Name: "staff", Domain: "hr", Owner: "admin", Description: "People and pay.",
		Outputs: []products.Port{{Namespace: catalog.Namespace{"crm"}, Table: "people"}},
		Metrics: []products.Metric{
			{Name: "payroll", Port: "people", Expr: "sum(salary)", Filter: "salary > 1000", Dimensions: []string{"region", "name"}},
			{Name: "headcount", Port: "people", Expr: "count(*)", Dimensions: []string{"region"}},
		}}
	if _, err := e.f.App.Products().Publish(context.Background(), products.Actor{Subject: authz.Subject{Principal: "admin", Admin: true}}, p, 0); err != nil {
		t.Fatal(err)
	}
}

// floe_metric answers a product's metric by name: the same rows as the
// hand-written query, with the caller's rights, filters included; names
// the definition does not hold are refused with their SQLSTATE.
func TestMetricFunction(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(6)...)
	publishStaff(t, e)
	tokens := map[string]string{}
	for _, name := range []string{"nobody", "describer", "reader", "eu_reader"} {
		tokens[name] = e.f.PrincipalToken(t, name)
	}
	e.grant(t, "describer", authz.Describe, "crm", "people", nil)
	e.grant(t, "reader", authz.Select, "crm", "people", nil)
	e.grant(t, "eu_reader", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'"})
	admin := e.admin(t)

	same := func(t *testing.T, _ any, got, want [][]any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	hand := mustRows(t, admin, "SELECT region, sum(salary) FROM crm.people WHERE salary > 1000 GROUP BY region ORDER BY 1")
	if len(hand) != 2 {
		t.Fatalf("reference: %v", hand)
	}
	for _, q := range []string{
		"SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])",
		"SELECT region, payroll FROM floe_metric('staff', 'payroll', dimensions => 'region', warehouse => '" + e.f.Warehouse + "') ORDER BY region",
		"SELECT m.region, m.payroll FROM floe.floe_metric('staff', 'payroll', dimensions := ['region']) AS m WHERE m.payroll > 0 ORDER BY 1",
		"WITH m AS (SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])) SELECT * FROM m ORDER BY 1",
	} {
		same(t, nil, mustRows(t, admin, q), hand)
	}
	total := mustRows(t, admin, "SELECT * FROM floe_metric('staff', 'payroll')")
	same(t, nil, total, mustRows(t, admin, "SELECT sum(salary) FROM crm.people WHERE salary > 1000"))
	// Two metrics joined on a dimension.
	same(t, nil, mustRows(t, admin, `SELECT p.region, p.payroll, h.headcount FROM floe_metric('staff', 'payroll', dimensions => ['region']) p
		JOIN floe_metric('staff', 'headcount', dimensions => ['region']) h USING (region) ORDER BY 1`),
		mustRows(t, admin, "SELECT region, sum(salary) FILTER (WHERE salary > 1000), count(*) FROM crm.people GROUP BY 1 ORDER BY 1"))

	for _, tc := range []struct{ q, code, msg string }{
		{"SELECT * FROM floe_metric('nope', 'payroll')", "42704", `data product "nope" does not exist`},
		{"SELECT * FROM floe_metric('staff', 'nope')", "42704", `product "staff" has no metric "nope" (metrics: payroll, headcount)`},
		{"SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['ssn'])", "22023", `cannot be grouped by "ssn" (allowed dimensions: region, name)`},
		{"SELECT * FROM floe_metric('staff', 'payroll', grain => 'month')", "22023", "has no time dimension"},
		{"SELECT * FROM floe_metric('staff', 'payroll', region => 'eu')", "22023", `has no argument "region"`},
		{"SELECT * FROM other.floe_metric('staff', 'payroll')", "42501", "table function floe_metric may not be used"},
	} {
		execErr(t, admin, tc.q, tc.code, tc.msg)
	}
	// A view over a metric: the call is resolved at each read.
	execTag(t, admin, "CREATE VIEW crm.payroll_by_region AS SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])")
	same(t, nil, mustRows(t, admin, "SELECT * FROM crm.payroll_by_region ORDER BY region"), hand)
	// INSERT ... SELECT from a metric.
	execTag(t, admin, "CREATE TABLE crm.payroll_copy AS SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region']) WHERE false")
	execTag(t, admin, "INSERT INTO crm.payroll_copy SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])")
	same(t, nil, mustRows(t, admin, "SELECT * FROM crm.payroll_copy ORDER BY region"), hand)

	q := "SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])"
	// Not seeing the product is not knowing it exists.
	execErr(t, e.connect(t, "nobody", tokens["nobody"]), q, "42704", `data product "staff" does not exist`)
	// Seeing it is not reading it.
	execErr(t, e.connect(t, "describer", tokens["describer"]), q, "42501", "SELECT")
	same(t, nil, mustRows(t, e.connect(t, "reader", tokens["reader"]), q), hand)
	// The caller's row filter applies inside the metric.
	same(t, nil, mustRows(t, e.connect(t, "eu_reader", tokens["eu_reader"]), q), hand[:1])
}
