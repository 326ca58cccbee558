package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/products"
)

// BenchmarkMetricFunction compares asking a product's metric by name
// (floe_metric: the product looked up, its SQL written and parsed into the
// statement, its visibility checked for a non-administrator) with running
// the SQL it generates directly, on one connection, over a 10,000-row
// table: the payroll by region, as the administrator and as a principal
// with SELECT on the table.
func BenchmarkMetricFunction(b *testing.B) {
	e := newEnv(b)
	appendPeople(b, e.createPeople(b, "crm", "people"), people(10000)...)
	publishStaff(b, e)
	ctx := context.Background()
	p, err := e.f.App.Products().Get(ctx, authz.Subject{Principal: "admin", Admin: true}, e.f.Warehouse, "staff", 0)
	if err != nil {
		b.Fatal(err)
	}
	generated, err := p.MetricSQL(products.MetricRequest{Metric: "payroll", Dimensions: []string{"region"}})
	if err != nil {
		b.Fatal(err)
	}
	byName := "SELECT * FROM floe_metric('staff', 'payroll', dimensions => ['region'])"
	readerToken := e.f.PrincipalToken(b, "reader")
	id := authz.Table(e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"})
	if _, err := e.f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("reader"), Privilege: authz.Select, On: id}); err != nil {
		b.Fatal(err)
	}
	for _, who := range []struct{ name, user, token string }{{"admin", "admin", e.f.Token(b)}, {"reader", "reader", readerToken}} {
		c := e.connect(b, who.user, who.token)
		run := func(sql string) time.Duration {
			start := time.Now()
			rows, err := c.Query(ctx, sql)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			if n != 2 {
				b.Fatalf("%s: %d rows, want 2", sql, n)
			}
			return time.Since(start)
		}
		// Each iteration runs both, one after the other, so that the
		// machine's other load weighs on both alike.
		b.Run(who.name, func(b *testing.B) {
			var gen, named time.Duration
			for b.Loop() {
				gen += run(generated)
				named += run(byName)
			}
			n := float64(b.N)
			b.ReportMetric(float64(gen.Microseconds())/n, "generated-µs/q")
			b.ReportMetric(float64(named.Microseconds())/n, "floe_metric-µs/q")
			b.ReportMetric(float64(named)/float64(gen), "ratio")
		})
	}
}
