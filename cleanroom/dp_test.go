package cleanroom_test

import (
	"context"
	"errors"
	"math"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/internal/testkit"
)

// dpRoom is a running Floe with the collaboration "overlap" of the
// differencing attack: 20 customers of the retailer, all exposed to the
// advertiser's campaign; customer 20 alone is in region 'x' and spent
// secretSpend, every other customer spent 100.
type dpRoom struct {
	f        *testkit.Floe
	svc      *cleanroom.Service
	retailer authz.Subject
	member   *pgx.Conn
	tok      string
}

const secretSpend = 737

func connectT(t testing.TB, f *testkit.Floe, user, token string) *pgx.Conn {
	t.Helper()
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, token), Host: f.SQLAddr, Path: "/" + f.Warehouse, RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func startDPRoom(t *testing.T) *dpRoom {
	ctx := context.Background()
	f := testkit.Start(t)
	admin := connectT(t, f, "admin", f.Token(t))
	for _, q := range []string{
		"CREATE SCHEMA retail", "CREATE SCHEMA ads",
		"CREATE TABLE retail.customers (customer_id BIGINT, email BIGINT, region VARCHAR)",
		"CREATE TABLE ads.exposures (user_id BIGINT, email BIGINT, campaign VARCHAR, spend BIGINT)",
		"INSERT INTO retail.customers SELECT i, i, CASE WHEN i = 20 THEN 'x' ELSE 'y' END FROM (VALUES " + values(21)[5:] + ") AS r(i)",
		"INSERT INTO ads.exposures SELECT i, i, 'spring', CASE WHEN i = 20 THEN 737 ELSE 100 END FROM (VALUES " + values(21)[5:] + ") AS r(i)",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	f.PrincipalToken(t, "retailer")
	tok := f.PrincipalToken(t, "advertiser")
	sub := func(name string) authz.Subject {
		p, err := f.App.Store().PrincipalByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return authz.Subject{Principal: p.Name, PrincipalID: p.ID}
	}
	retailer, advertiser := sub("retailer"), sub("advertiser")
	for _, g := range []struct{ who, ns, tbl string }{{"retailer", "retail", "customers"}, {"advertiser", "ads", "exposures"}} {
		if _, err := f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(g.who), Privilege: authz.Select,
			On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{g.ns}, Name: g.tbl})}); err != nil {
			t.Fatal(err)
		}
	}
	svc := f.App.CleanRooms()
	if _, err := svc.Create(ctx, retailer, cleanroom.CreateRequest{Name: "overlap", Members: []string{"advertiser"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		by authz.Subject
		t  cleanroom.ConfiguredTable
	}{
		{retailer, cleanroom.ConfiguredTable{Name: "customers", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"retail"}, Table: "customers",
			JoinKeys: []string{"email"}, Dimensions: []string{"region"}, Identifier: "customer_id", Rule: cleanroom.AggregationRule{MinIdentifiers: 5}}},
		{advertiser, cleanroom.ConfiguredTable{Name: "exposures", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"ads"}, Table: "exposures",
			JoinKeys: []string{"email"}, Dimensions: []string{"campaign"}, Columns: []string{"spend"}, Identifier: "user_id",
			Rule: cleanroom.AggregationRule{MinIdentifiers: 5, MaxContributions: 1, Ranges: map[string]cleanroom.Range{"spend": {Lo: 0, Hi: 1000}}}}},
	} {
		if _, err := svc.ConfigureTable(ctx, c.by, "overlap", c.t); err != nil {
			t.Fatal(err)
		}
	}
	r := &dpRoom{f: f, svc: svc, retailer: retailer, tok: tok}
	r.member = r.conn(t)
	return r
}

func (r *dpRoom) conn(t testing.TB) *pgx.Conn {
	c := connectT(t, r.f, "advertiser", r.tok)
	if _, err := c.Exec(context.Background(), "SET floe.collaboration = 'overlap'"); err != nil {
		t.Fatal(err)
	}
	return c
}

// The two queries of the differencing attack: everyone, and everyone but
// the one customer of region 'x'.
const (
	attackAll   = "SELECT sum(e.spend) FROM customers c JOIN exposures e ON c.email = e.email"
	attackOther = "SELECT sum(e.spend) FROM customers c JOIN exposures e ON c.email = e.email WHERE c.region = 'y'"
)

func sumOf(t testing.TB, c *pgx.Conn, q string) float64 {
	t.Helper()
	var v float64
	if err := c.QueryRow(context.Background(), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// TestDifferencingAttack: under the aggregation rule alone, two queries
// whose inputs differ by one customer reveal that customer's spend
// exactly (both pass the threshold of 5). With differential privacy on
// (Laplace, ε = 30 per query, split over the row's 3 noisy values: the
// sum and the two tables' identifier counts, so ε = 10 for the sum; the
// spend clamped to [0, 1000], one row per identifier: Δ = 1000, b = Δ/ε =
// 100), over 2,000 pairs of runs (400 under the race detector, with
// the tolerances that follow from n) the difference d = q1 - q2 has
//   - mean 737 within 5 standard errors: the noise of each side is
//     Laplace(b) with variance 2b², so Var(d) = 2·2b² = 40,000, sd 200,
//     standard error 200/sqrt(2000) ≈ 4.5, tolerance 22.5;
//   - variance within 5 relative standard errors of 4b² (the sample
//     variance's relative standard error is sqrt((κ+2)/n) ≈ 0.042 with the
//     difference's excess kurtosis κ = 1.5: a tolerance of 21%);
//   - a single run does not reveal the value: P(|d - 737| < 0.5) is about
//     1/(4b) = 0.0025 (the density of the difference of two Laplace(b) at
//     0 is 1/(4b)); the test allows at most 1% of the runs.
func TestDifferencingAttack(t *testing.T) {
	ctx := context.Background()
	r := startDPRoom(t)

	// Without DP: the attack works.
	all, other := sumOf(t, r.member, attackAll), sumOf(t, r.member, attackOther)
	if all-other != secretSpend {
		t.Fatalf("without differential privacy the difference is %v, want exactly %d (the attack should work)", all-other, secretSpend)
	}

	runs := 2000
	if raceEnabled {
		runs = 400
	}
	const eps = 30.0
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: eps}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", float64(2*runs+1)*eps, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	// A prepared statement's result type changes with DP on (SUM becomes
	// DOUBLE): a new connection prepares afresh.
	r.member = r.conn(t)
	b := 1000 / (eps / 3)
	var sum, sumSq float64
	exact := 0
	for range runs {
		d := sumOf(t, r.member, attackAll) - sumOf(t, r.member, attackOther)
		sum += d
		sumSq += d * d
		if math.Abs(d-secretSpend) < 0.5 {
			exact++
		}
	}
	n := float64(runs)
	mean := sum / n
	variance := (sumSq - n*mean*mean) / (n - 1)
	want := 4 * b * b
	t.Logf("mean %.2f (want %d), variance %.0f (theory %.0f, ratio %.3f), |d-737|<0.5 in %d of %d runs", mean, secretSpend, variance, want, variance/want, exact, runs)
	if se := math.Sqrt(want / n); math.Abs(mean-secretSpend) > 5*se {
		t.Errorf("mean difference %.2f, want %d within %.1f", mean, secretSpend, 5*se)
	}
	if tol := 5 * math.Sqrt(3.5/n); math.Abs(variance/want-1) > tol {
		t.Errorf("variance %.0f, want %.0f within %.0f%%", variance, want, 100*tol)
	}
	if exact > max(runs/100, 5) {
		t.Errorf("%d of %d runs revealed the value within 0.5; want at most 1%%", exact, runs)
	}
	// Under DP, queries that would use exact aggregates are refused.
	for _, q := range []string{
		"SELECT e.campaign, sum(e.spend) FROM exposures e GROUP BY e.campaign HAVING sum(e.spend) > 10",
		"SELECT e.campaign, round(sum(e.spend)) FROM exposures e GROUP BY e.campaign",
		"SELECT e.campaign, sum(e.spend) AS s FROM exposures e GROUP BY e.campaign ORDER BY s",
		"SELECT c.region, count(*) FROM customers c GROUP BY c.region ORDER BY 2",
	} {
		_, err := r.member.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "differential privacy") {
			t.Errorf("%s: %v, want 42501 differential privacy", q, err)
		}
	}
}

// TestPrivacyBudgetCharged: every query is charged ε before it runs, a
// query beyond the budget is refused with 42501 naming what remains, the
// query log and the budget show the charges, and 30 concurrent queries
// against a budget for 10 never overspend.
func TestPrivacyBudgetCharged(t *testing.T) {
	ctx := context.Background()
	r := startDPRoom(t)
	const q = "SELECT e.campaign, count(*), avg(e.spend) FROM customers c JOIN exposures e ON c.email = e.email GROUP BY e.campaign"
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 0.25}); err != nil {
		t.Fatal(err)
	}
	// DP on without a budget: refused.
	if _, err := r.member.Exec(ctx, q); !isDenied(err, "no privacy budget") {
		t.Fatalf("no budget: %v", err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", 1, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := r.member.Exec(ctx, q); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		b, err := r.svc.Budget(ctx, r.retailer, "overlap")
		if err != nil || math.Abs(b.Remaining-(1-0.25*float64(i+1))) > 1e-9 {
			t.Fatalf("after query %d: %+v %v", i, b, err)
		}
	}
	if _, err := r.member.Exec(ctx, q); !isDenied(err, "0 of 1 remains") {
		t.Fatalf("beyond the budget: %v", err)
	}
	log, err := r.svc.Log(ctx, r.retailer, "overlap", 10)
	if err != nil || len(log) < 5 || log[0].Outcome != cleanroom.OutcomeDenied || log[0].BudgetRemaining == nil || *log[0].BudgetRemaining != 0 ||
		log[1].Epsilon != 0.25 || log[1].BudgetRemaining == nil || *log[1].BudgetRemaining != 0 {
		t.Fatalf("query log: %+v %v", log, err)
	}

	// Concurrent queries: 1 spent, a budget of 3 leaves 2 for 10 of them,
	// 30 at once.
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", 3, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 0.2}); err != nil {
		t.Fatal(err)
	}
	conns := make([]*pgx.Conn, 30)
	for i := range conns {
		conns[i] = r.conn(t)
	}
	var ok, denied atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_, err := c.Exec(ctx, q)
			switch {
			case err == nil:
				ok.Add(1)
			case isDenied(err, "exhausted"):
				denied.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 10 || denied.Load() != 20 {
		t.Fatalf("%d queries ran, %d refused; want 10 and 20", ok.Load(), denied.Load())
	}
	if b, err := r.svc.Budget(ctx, r.retailer, "overlap"); err != nil || b.Remaining != 0 || b.Spent != 3 {
		t.Fatalf("after the race: %+v %v", b, err)
	}
}

func isDenied(err error, contains string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501" && strings.Contains(pe.Message, contains)
}

// TestShowPrivacyBudget: SHOW floe.privacy_budget in a collaboration is a
// result set with the mechanism, the per-query charge, the budget, what
// remains and when it refreshes; it drops by the charge after a DP query.
// Outside a collaboration, and for a collaboration without a budget, it
// is an error (42704).
func TestShowPrivacyBudget(t *testing.T) {
	ctx := context.Background()
	r := startDPRoom(t)
	outside := connectT(t, r.f, "advertiser", r.tok)
	if _, err := outside.Exec(ctx, "SHOW floe.privacy_budget"); !hasCode(err, "42704", "SET floe.collaboration") {
		t.Fatalf("outside a collaboration: %v", err)
	}
	if _, err := r.member.Exec(ctx, "SHOW floe.privacy_budget"); !hasCode(err, "42704", "no privacy budget") {
		t.Fatalf("without a budget: %v", err)
	}
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Gaussian, Epsilon: 0.25, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", 1, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	type budget struct {
		collab, mech            string
		eps, delta              *float64
		total, spent, remaining float64
		period                  string
		start, refresh          time.Time
	}
	show := func() budget {
		var b budget
		if err := r.member.QueryRow(ctx, "SHOW floe.privacy_budget").Scan(&b.collab, &b.mech, &b.eps, &b.delta, &b.total, &b.spent, &b.remaining,
			&b.period, &b.start, &b.refresh); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := show()
	if b.collab != "overlap" || b.mech != "gaussian" || b.eps == nil || *b.eps != 0.25 || b.delta == nil || *b.delta != 1e-5 ||
		b.total != 1 || b.spent != 0 || b.remaining != 1 || b.period != "24h0m0s" || !b.refresh.Equal(b.start.Add(24*time.Hour)) {
		t.Fatalf("before a query: %+v", b)
	}
	if _, err := r.member.Exec(ctx, "SELECT e.campaign, count(*) FROM customers c JOIN exposures e ON c.email = e.email GROUP BY e.campaign"); err != nil {
		t.Fatal(err)
	}
	if a := show(); a.spent != 0.25 || a.remaining != 0.75 || !a.start.Equal(b.start) {
		t.Fatalf("after a query charged 0.25: %+v", a)
	}
}

func hasCode(err error, code, contains string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code && strings.Contains(pe.Message, contains)
}
