package cleanroom

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
)

// ActionBudget is the audit action of setting a collaboration's privacy
// budget; ActionPrivacy of setting its differential privacy.
const (
	ActionBudget  = "cleanroom.budget.set"
	ActionPrivacy = "cleanroom.privacy.set"
)

// Micro is the unit budgets are stored and charged in: a millionth of ε,
// so that charges add up exactly.
const Micro = 1_000_000

// MinPeriod and MaxPeriod bound a budget's refresh period.
const (
	MinPeriod = time.Minute
	MaxPeriod = 366 * 24 * time.Hour
)

// BudgetState is a stored budget, in millionths of ε.
type BudgetState struct {
	Budget      int64
	Spent       int64
	Period      time.Duration
	PeriodStart time.Time
}

// Current is the state at now: a period that has ended is restored in
// full (the new period starts a whole number of periods after the old).
func (b BudgetState) Current(now time.Time) BudgetState {
	if b.Period > 0 && !now.Before(b.PeriodStart.Add(b.Period)) {
		n := now.Sub(b.PeriodStart) / b.Period
		b.PeriodStart = b.PeriodStart.Add(n * b.Period)
		b.Spent = 0
	}
	return b
}

// Budgets keeps privacy budgets (package sqlstore). Amounts are
// millionths of ε; now is the caller's clock.
type Budgets interface {
	// SetPrivacyBudget sets a collaboration's budget and period; a new
	// budget starts its first period at now with nothing spent, a changed
	// one keeps what its current period spent.
	SetPrivacyBudget(ctx context.Context, name string, budget int64, period time.Duration, now time.Time) error
	// PrivacyBudget returns the budget as at now, or floe.NotFound.
	PrivacyBudget(ctx context.Context, name string, now time.Time) (BudgetState, error)
	// ChargePrivacyBudget charges amount in one conditional update:
	// floe.Forbidden (with the state) when it would overspend the current
	// period's budget, floe.NotFound when there is none.
	ChargePrivacyBudget(ctx context.Context, name string, amount int64, now time.Time) (BudgetState, error)
}

// ToMicro converts ε to millionths, rounding up (a charge is never
// rounded down).
func ToMicro(eps float64) int64 { return int64(math.Ceil(eps*Micro - 1e-6)) }

func fromMicro(m int64) float64 { return float64(m) / Micro }

// view renders a stored budget.
func (b BudgetState) view(name string) Budget {
	return Budget{Collaboration: name, Epsilon: fromMicro(b.Budget), Period: b.Period, PeriodText: b.Period.String(),
		Spent: fromMicro(b.Spent), Remaining: fromMicro(max(b.Budget-b.Spent, 0)), PeriodStart: b.PeriodStart.UTC(),
		Refresh: b.PeriodStart.Add(b.Period).UTC()}
}

func (s *Service) budgets() (Budgets, error) {
	if s.o.Budgets == nil {
		return nil, floe.E(floe.Unavailable, "collaboration", "privacy budgets are not available on this server")
	}
	return s.o.Budgets, nil
}

// SetPrivacy turns differential privacy on (p set) or off (nil) for a
// collaboration: its creator or an administrator.
func (s *Service) SetPrivacy(ctx context.Context, sub authz.Subject, name string, p *Privacy) (Collaboration, error) {
	return s.update(ctx, sub, name, func(c *Collaboration) error {
		if err := manages(sub, c); err != nil {
			return err
		}
		c.Privacy = p
		return nil
	})
}

// SetBudget sets a collaboration's privacy budget: epsilon per period
// (its creator or an administrator).
func (s *Service) SetBudget(ctx context.Context, sub authz.Subject, name string, epsilon float64, period time.Duration) (Budget, error) {
	b, err := s.budgets()
	if err != nil {
		return Budget{}, err
	}
	c, err := s.visible(ctx, sub, name)
	if err != nil {
		return Budget{}, err
	}
	if err := manages(sub, &c); err != nil {
		return Budget{}, err
	}
	if !(epsilon > 0 && epsilon <= MaxEpsilon) {
		return Budget{}, invalid("budget: epsilon must be above 0 and at most %g", float64(MaxEpsilon))
	}
	if period < MinPeriod || period > MaxPeriod {
		return Budget{}, invalid("budget: the period must be between %s and %s", MinPeriod, MaxPeriod)
	}
	now := s.o.Now()
	if err := b.SetPrivacyBudget(ctx, name, int64(math.Floor(epsilon*Micro+1e-6)), period, now); err != nil {
		return Budget{}, err
	}
	return s.Budget(ctx, sub, name)
}

// Budget returns a collaboration's privacy budget as now: every member
// sees it.
func (s *Service) Budget(ctx context.Context, sub authz.Subject, name string) (Budget, error) {
	b, err := s.budgets()
	if err != nil {
		return Budget{}, err
	}
	if _, err := s.visible(ctx, sub, name); err != nil {
		return Budget{}, err
	}
	st, err := b.PrivacyBudget(ctx, name, s.o.Now())
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Budget{}, floe.E(floe.NotFound, "collaboration", "collaboration %q has no privacy budget", name)
		}
		return Budget{}, err
	}
	return st.view(name), nil
}

// Charge spends epsilon of a collaboration's budget for one query, before
// it runs: floe.Forbidden naming the remaining budget when it would
// overspend (or when there is no budget). It returns what remains.
func (s *Service) Charge(ctx context.Context, name string, epsilon float64) (float64, error) {
	b, err := s.budgets()
	if err != nil {
		return 0, err
	}
	st, err := b.ChargePrivacyBudget(ctx, name, ToMicro(epsilon), s.o.Now())
	if err == nil {
		return fromMicro(st.Budget - st.Spent), nil
	}
	switch floe.KindOf(err) {
	case floe.NotFound:
		return 0, floe.E(floe.Forbidden, "collaboration", "collaboration %q has differential privacy on but no privacy budget: its creator sets one (floe cleanroom budget %s --set EPS)", name, name)
	case floe.Forbidden:
		v := st.view(name)
		return v.Remaining, floe.E(floe.Forbidden, "collaboration", "%s", fmt.Sprintf(
			"privacy budget of collaboration %q exhausted: the query costs epsilon %g, %g of %g remains until %s",
			name, epsilon, v.Remaining, v.Epsilon, v.Refresh.Format(time.RFC3339)))
	}
	return 0, err
}
