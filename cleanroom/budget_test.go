package cleanroom_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/store/sqlstore"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestBudgetChargedAndRestored: the creator sets the budget (no one
// else), every member reads it, charges add up, a charge that would
// overspend is refused naming what remains and when it refreshes, and
// the budget is restored when the period ends (a fake clock), over the
// real store (SQLite).
func TestBudgetChargedAndRestored(t *testing.T) {
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := &fakeClock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	s := newServiceWith(t, 10, st, clock.now)
	retailer, advertiser, outsider := subject("retailer"), subject("advertiser"), subject("outsider")
	if _, err := s.Create(ctx, retailer, cleanroom.CreateRequest{Name: "overlap", Members: []string{"advertiser"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Charge(ctx, "overlap", 0.1); floe.KindOf(err) != floe.Forbidden || !strings.Contains(err.Error(), "no privacy budget") {
		t.Fatalf("charge without a budget: %v", err)
	}
	for _, tc := range []struct {
		name   string
		eps    float64
		period time.Duration
		by     string
		want   floe.Kind
	}{
		{"a member who is not the creator", 1, 24 * time.Hour, "advertiser", floe.Forbidden},
		{"an outsider", 1, 24 * time.Hour, "outsider", floe.NotFound},
		{"no epsilon", 0, 24 * time.Hour, "retailer", floe.Invalid},
		{"a period too short", 1, time.Second, "retailer", floe.Invalid},
	} {
		if _, err := s.SetBudget(ctx, subject(tc.by), "overlap", tc.eps, tc.period); floe.KindOf(err) != tc.want {
			t.Errorf("%s: %v, want kind %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.SetBudget(ctx, retailer, "overlap", 1, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.6, 0.2} {
		rem, err := s.Charge(ctx, "overlap", 0.4)
		if err != nil || rem < want-1e-9 || rem > want+1e-9 {
			t.Fatalf("charge %d: %v %v, want %v left", i, rem, err, want)
		}
	}
	rem, err := s.Charge(ctx, "overlap", 0.4)
	if floe.KindOf(err) != floe.Forbidden || rem != 0.2 || !strings.Contains(err.Error(), "0.2 of 1 remains until 2026-12-05T12:00:00Z") {
		t.Fatalf("overspend: %v %v", rem, err)
	}
	if b, err := s.Budget(ctx, advertiser, "overlap"); err != nil || b.Remaining != 0.2 || b.Spent != 0.8 {
		t.Fatalf("a member reads the budget: %+v %v", b, err)
	}
	if _, err := s.Budget(ctx, outsider, "overlap"); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("an outsider reads the budget: %v", err)
	}
	clock.add(24*time.Hour - time.Second)
	if _, err := s.Charge(ctx, "overlap", 0.4); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("a second before the refresh: %v", err)
	}
	clock.add(time.Second)
	if rem, err := s.Charge(ctx, "overlap", 0.4); err != nil || rem < 0.6-1e-9 || rem > 0.6+1e-9 {
		t.Fatalf("after the refresh: %v %v", rem, err)
	}
	if b, err := s.Budget(ctx, retailer, "overlap"); err != nil || !b.PeriodStart.Equal(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("the new period: %+v %v", b, err)
	}
}

// TestPrivacyValidation: mechanisms, epsilon and delta.
func TestPrivacyValidation(t *testing.T) {
	for _, tc := range []struct {
		p  cleanroom.Privacy
		ok bool
	}{
		{cleanroom.Privacy{Mechanism: "laplace", Epsilon: 0.5}, true},
		{cleanroom.Privacy{Mechanism: "laplace", Epsilon: 0}, false},
		{cleanroom.Privacy{Mechanism: "laplace", Epsilon: 0.5, Delta: 1e-6}, false},
		{cleanroom.Privacy{Mechanism: "gaussian", Epsilon: 0.5, Delta: 1e-6}, true},
		{cleanroom.Privacy{Mechanism: "gaussian", Epsilon: 0.5}, false},
		{cleanroom.Privacy{Mechanism: "gaussian", Epsilon: 1.5, Delta: 1e-6}, false},
		{cleanroom.Privacy{Mechanism: "exponential", Epsilon: 0.5}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok %v", tc.p, err, tc.ok)
		}
	}
}
