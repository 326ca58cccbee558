package cleanroom_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkOverlap times, in one run, the overlap aggregation over two
// 1 M-row tables joined on a key (500,000 matches, 20 groups) through the
// SQL endpoint (pgx): by the administrator over the tables themselves
// ("plain"), and by a member in the collaboration ("cleanroom": the rule
// check on the syntax tree, the owners' rights, the configured columns'
// projection and the thresholds' COUNT(DISTINCT) per table). Both warm;
// "alternating" runs them in turn and reports the ratio. The issue's
// target (<= 1.5x with differential privacy on) is "alternating-dp": the
// collaboration with Laplace noise, one row per identifier and the spend
// clamped to [0, 100].
func BenchmarkOverlap(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	f := testkit.Start(b)
	admin := connect(b, f, "admin", f.Token(b))
	thousand := values(1000)
	gen := "(SELECT a.i * 1000 + b.i AS k FROM (VALUES " + thousand + ") AS a(i), (VALUES " + thousand + ") AS b(i)) AS g"
	for _, q := range []string{
		"CREATE SCHEMA retail", "CREATE SCHEMA ads",
		"CREATE TABLE retail.customers (customer_id BIGINT, email BIGINT, segment VARCHAR)",
		"CREATE TABLE ads.exposures (user_id BIGINT, email BIGINT, campaign VARCHAR, spend BIGINT)",
		"INSERT INTO retail.customers SELECT k, k, 'seg' || CAST(k % 10 AS VARCHAR) FROM " + gen,
		"INSERT INTO ads.exposures SELECT k, k + 500000, 'c' || CAST(k % 20 AS VARCHAR), k % 100 FROM " + gen,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q[:min(len(q), 60)], err)
		}
	}
	f.PrincipalToken(b, "retailer")
	advertiserTok := f.PrincipalToken(b, "advertiser")
	sub := func(name string) authz.Subject {
		p, err := f.App.Store().PrincipalByName(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		return authz.Subject{Principal: p.Name, PrincipalID: p.ID}
	}
	retailer, advertiser := sub("retailer"), sub("advertiser")
	for _, g := range []struct {
		who     string
		ns, tbl string
	}{{"retailer", "retail", "customers"}, {"advertiser", "ads", "exposures"}} {
		if _, err := f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(g.who), Privilege: authz.Select,
			On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{g.ns}, Name: g.tbl})}); err != nil {
			b.Fatal(err)
		}
	}
	svc := f.App.CleanRooms()
	if _, err := svc.Create(ctx, retailer, cleanroom.CreateRequest{Name: "overlap", Members: []string{"advertiser"}}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		by authz.Subject
		t  cleanroom.ConfiguredTable
	}{
		{retailer, cleanroom.ConfiguredTable{Name: "customers", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"retail"}, Table: "customers",
			JoinKeys: []string{"email"}, Dimensions: []string{"segment"}, Identifier: "customer_id", Rule: cleanroom.AggregationRule{MinIdentifiers: 100}}},
		{advertiser, cleanroom.ConfiguredTable{Name: "exposures", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"ads"}, Table: "exposures",
			JoinKeys: []string{"email"}, Dimensions: []string{"campaign"}, Columns: []string{"spend"}, Identifier: "user_id",
			Rule: cleanroom.AggregationRule{MinIdentifiers: 100, MaxContributions: 1, Ranges: map[string]cleanroom.Range{"spend": {Lo: 0, Hi: 100}}}}},
	} {
		if _, err := svc.ConfigureTable(ctx, c.by, "overlap", c.t); err != nil {
			b.Fatal(err)
		}
	}
	member := connect(b, f, "advertiser", advertiserTok)
	if _, err := member.Exec(ctx, "SET floe.collaboration = 'overlap'"); err != nil {
		b.Fatal(err)
	}
	const body = "SELECT c.segment, e.campaign, count(DISTINCT c.customer_id), sum(e.spend) FROM %s c JOIN %s e ON c.email = e.email GROUP BY c.segment, e.campaign"
	plainQ := fmt.Sprintf(body, "retail.customers", "ads.exposures")
	roomQ := fmt.Sprintf(body, "customers", "exposures")
	run := func(b *testing.B, conn *pgx.Conn, q string) int64 {
		rs, err := conn.Query(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		var total, groups int64
		for rs.Next() {
			var seg, camp string
			var n int64
			var s float64
			if err := rs.Scan(&seg, &camp, &n, &s); err != nil {
				b.Fatal(err)
			}
			total += n
			groups++
		}
		if err := rs.Err(); err != nil {
			b.Fatal(err)
		}
		if groups != 20 {
			b.Fatalf("%d groups, want 20", groups)
		}
		return total
	}
	for _, c := range []struct {
		name string
		conn *pgx.Conn
		q    string
	}{{"plain", admin, plainQ}, {"cleanroom", member, roomQ}} {
		b.Run(c.name, func(b *testing.B) {
			if got := run(b, c.conn, c.q); got != rows/2 {
				b.Fatalf("%d customers matched, want %d", got, rows/2)
			}
			for b.Loop() {
				run(b, c.conn, c.q)
			}
		})
	}
	b.Run("alternating", func(b *testing.B) {
		var plain, room time.Duration
		for b.Loop() {
			t0 := time.Now()
			run(b, admin, plainQ)
			t1 := time.Now()
			run(b, member, roomQ)
			plain, room = plain+t1.Sub(t0), room+time.Since(t1)
		}
		b.ReportMetric(float64(plain.Microseconds())/1000/float64(b.N), "plain-ms/op")
		b.ReportMetric(float64(room.Microseconds())/1000/float64(b.N), "cleanroom-ms/op")
		b.ReportMetric(float64(room)/float64(plain), "cleanroom/plain")
	})
	// Differential privacy on: the row bound per identifier, the clamp,
	// the noise and the budget's charge (a budget that lasts the run).
	if _, err := svc.SetPrivacy(ctx, retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 1}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.SetBudget(ctx, retailer, "overlap", cleanroom.MaxEpsilon, 24*time.Hour); err != nil {
		b.Fatal(err)
	}
	dpMember := connect(b, f, "advertiser", advertiserTok)
	if _, err := dpMember.Exec(ctx, "SET floe.collaboration = 'overlap'"); err != nil {
		b.Fatal(err)
	}
	b.Run("alternating-dp", func(b *testing.B) {
		// Warm, as the others: the first DP query of a table snapshot
		// also checks, once, whether its identifiers are unique and its
		// join keys each one person's (cached per snapshot).
		run(b, dpMember, roomQ)
		var plain, room time.Duration
		for b.Loop() {
			t0 := time.Now()
			run(b, admin, plainQ)
			t1 := time.Now()
			if got := run(b, dpMember, roomQ); got < rows/2-1000 || got > rows/2+1000 {
				b.Fatalf("%d customers matched (noisy), want about %d", got, rows/2)
			}
			plain, room = plain+t1.Sub(t0), room+time.Since(t1)
		}
		b.ReportMetric(float64(plain.Microseconds())/1000/float64(b.N), "plain-ms/op")
		b.ReportMetric(float64(room.Microseconds())/1000/float64(b.N), "dp-ms/op")
		b.ReportMetric(float64(room)/float64(plain), "dp/plain")
	})
}

func connect(b *testing.B, f *testkit.Floe, user, token string) *pgx.Conn {
	b.Helper()
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, token), Host: f.SQLAddr, Path: "/" + f.Warehouse, RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// values renders (0), (1), ... (n-1).
func values(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d)", i)
	}
	return sb.String()
}
