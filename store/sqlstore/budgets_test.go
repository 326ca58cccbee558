package sqlstore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
)

// TestPrivacyBudgets: charges add up exactly, a charge that would
// overspend is refused (with the state) and changes nothing, the budget is
// restored when its period ends (a clock passed in), a changed budget
// keeps what was spent, a drop removes it, and 40 concurrent charges of
// 0.1 against a budget of 1 succeed exactly 10 times, on every backend.
func TestPrivacyBudgets(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, be.dsn(t), Options{})
			t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			day := 24 * time.Hour
			if _, err := s.ChargePrivacyBudget(ctx, "overlap", 1, t0); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("charge without budget: %v", err)
			}
			if err := s.SetPrivacyBudget(ctx, "overlap", 1_000_000, day, t0); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				b, err := s.ChargePrivacyBudget(ctx, "overlap", 300_000, t0.Add(time.Duration(i)*time.Hour))
				if err != nil || b.Spent != int64(i+1)*300_000 {
					t.Fatalf("charge %d: %+v %v", i, b, err)
				}
			}
			b, err := s.ChargePrivacyBudget(ctx, "overlap", 200_000, t0.Add(5*time.Hour))
			if floe.KindOf(err) != floe.Forbidden || b.Spent != 900_000 || b.Budget != 1_000_000 {
				t.Fatalf("overspend: %+v %v", b, err)
			}
			if b, err := s.ChargePrivacyBudget(ctx, "overlap", 100_000, t0.Add(6*time.Hour)); err != nil || b.Spent != 1_000_000 {
				t.Fatalf("exactly to the budget: %+v %v", b, err)
			}
			if b, err := s.PrivacyBudget(ctx, "overlap", t0.Add(day-time.Nanosecond)); err != nil || b.Spent != 1_000_000 {
				t.Fatalf("before refresh: %+v %v", b, err)
			}
			// Two and a half periods later: restored, the period aligned.
			later := t0.Add(2*day + 12*time.Hour)
			if b, err := s.PrivacyBudget(ctx, "overlap", later); err != nil || b.Spent != 0 || !b.PeriodStart.Equal(t0.Add(2*day)) {
				t.Fatalf("after refresh: %+v %v", b, err)
			}
			if b, err := s.ChargePrivacyBudget(ctx, "overlap", 400_000, later); err != nil || b.Spent != 400_000 || !b.PeriodStart.Equal(t0.Add(2*day)) {
				t.Fatalf("charge after refresh: %+v %v", b, err)
			}
			if err := s.SetPrivacyBudget(ctx, "overlap", 500_000, day, later); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ChargePrivacyBudget(ctx, "overlap", 200_000, later); floe.KindOf(err) != floe.Forbidden {
				t.Fatalf("lowered budget keeps the spent: %v", err)
			}

			// Concurrent charges never overspend.
			if err := s.SetPrivacyBudget(ctx, "race", 1_000_000, day, t0); err != nil {
				t.Fatal(err)
			}
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for range 40 {
				wg.Go(func() {
					_, err := s.ChargePrivacyBudget(ctx, "race", 100_000, t0.Add(time.Minute))
					switch floe.KindOf(err) {
					case floe.Forbidden:
						refused.Add(1)
					default:
						if err != nil {
							t.Error(err)
							return
						}
						ok.Add(1)
					}
				})
			}
			wg.Wait()
			if ok.Load() != 10 || refused.Load() != 30 {
				t.Fatalf("%d charges succeeded, %d refused; want 10 and 30", ok.Load(), refused.Load())
			}
			if b, err := s.PrivacyBudget(ctx, "race", t0.Add(time.Minute)); err != nil || b.Spent != 1_000_000 {
				t.Fatalf("race: %+v %v", b, err)
			}
		})
	}
}
