package cleanroom_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/cleanroom"
)

// TestContributionBoundWithDuplicates: under differential privacy the
// engine skips the per-identifier row bound for a table snapshot whose
// identifier is unique (it keeps every row then), and applies it again
// once a new snapshot has duplicates. With ε = 30,000 split over the
// query's three noisy values the Laplace noise of the sum has scale
// b = 1000/10,000 = 0.1 (|noise| >= 3 with probability e^-30), so the
// sums are compared to within 3:
//   - unique identifiers: 19·100 + 737 = 2637;
//   - ten more rows of user 20 spending 1000 each (a new snapshot): the
//     exact sum would be 12,637; bounded to one row of user 20 it is 2637
//     or 2900 (the kept row is arbitrary);
//   - the duplicates deleted again: 2637.
func TestContributionBoundWithDuplicates(t *testing.T) {
	ctx := context.Background()
	r := startDPRoom(t)
	const eps = 30_000.0
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: eps}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", cleanroom.MaxEpsilon, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	r.member = r.conn(t)
	admin := connectT(t, r.f, "admin", r.f.Token(t))
	near := func(got float64, want ...float64) bool {
		for _, w := range want {
			if math.Abs(got-w) < 3 {
				return true
			}
		}
		return false
	}
	if got := sumOf(t, r.member, attackAll); !near(got, 2637) {
		t.Fatalf("unique identifiers: sum %v, want 2637", got)
	}
	if _, err := admin.Exec(ctx, "INSERT INTO ads.exposures SELECT 20, 20, 'spring', 1000 FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)) AS r(i)"); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(t, admin, "SELECT sum(e.spend) FROM retail.customers c JOIN ads.exposures e ON c.email = e.email"); got != 12637 {
		t.Fatalf("the exact sum over the duplicates is %v, want 12637", got)
	}
	for range 3 {
		if got := sumOf(t, r.member, attackAll); !near(got, 2637, 2900) {
			t.Fatalf("duplicate identifiers: sum %v, want 2637 or 2900 (one row of user 20)", got)
		}
	}
	if _, err := admin.Exec(ctx, "DELETE FROM ads.exposures WHERE user_id = 20 AND spend = 1000"); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(t, r.member, attackAll); !near(got, 2637) {
		t.Fatalf("duplicates deleted: sum %v, want 2637", got)
	}
}

// TestJoinFanOutUnderDP: one person joined to many rows of the other
// table. Ten more customers (distinct people, one row each) share user
// 20's e-mail: the exact join then counts user 20's spend 11 times (sum
// 10,007), eleven times the one row the exposures' rule lets an
// identifier contribute, and the noise (calibrated to that one row) would
// not hide it. Under differential privacy such a join is refused (42501,
// naming the join key) before the budget is charged; a join on keys unique in both tables runs (before
// the insert, and again once the extra customers are deleted); without
// differential privacy the aggregation rule still runs it.
func TestJoinFanOutUnderDP(t *testing.T) {
	ctx := context.Background()
	r := startDPRoom(t)
	admin := connectT(t, r.f, "admin", r.f.Token(t))
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 30_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "overlap", cleanroom.MaxEpsilon, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	r.member = r.conn(t)
	if got := sumOf(t, r.member, attackAll); math.Abs(got-2637) >= 3 {
		t.Fatalf("a one-to-one join: sum %v, want 2637", got)
	}
	if _, err := admin.Exec(ctx, "INSERT INTO retail.customers SELECT 100 + i, 20, 'y' FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)) AS r(i)"); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(t, admin, "SELECT sum(e.spend) FROM retail.customers c JOIN ads.exposures e ON c.email = e.email"); got != 10007 {
		t.Fatalf("the exact sum with the fan-out is %v, want 10007", got)
	}
	before, err := r.svc.Budget(ctx, r.retailer, "overlap")
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	err = r.member.QueryRow(ctx, attackAll).Scan(&s)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "join key email of configured table customers is shared by several identifiers") {
		t.Fatalf("a join that fans out under DP: %v (sum %v), want 42501 join key email ... shared", err, s)
	}
	if after, err := r.svc.Budget(ctx, r.retailer, "overlap"); err != nil || after.Remaining != before.Remaining {
		t.Fatalf("the refused query was charged: %v remaining, was %v (%v)", after.Remaining, before.Remaining, err)
	}
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", nil); err != nil {
		t.Fatal(err)
	}
	plain := r.conn(t)
	if got := sumOf(t, plain, attackAll); got != 10007 {
		t.Fatalf("without DP the aggregation rule runs the join: sum %v, want 10007", got)
	}
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "overlap", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 30_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "DELETE FROM retail.customers WHERE customer_id > 100"); err != nil {
		t.Fatal(err)
	}
	r.member = r.conn(t)
	if got := sumOf(t, r.member, attackAll); math.Abs(got-2637) >= 3 {
		t.Fatalf("the extra customers deleted: sum %v, want 2637", got)
	}
}
