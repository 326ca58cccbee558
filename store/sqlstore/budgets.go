package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/cleanroom"
)

var _ cleanroom.Budgets = (*Store)(nil)

func noBudget(name string) error {
	return floe.E(floe.NotFound, "collaboration", "collaboration %q has no privacy budget", name)
}

func readBudget(ctx context.Context, c conn, name string) (cleanroom.BudgetState, error) {
	var b cleanroom.BudgetState
	var period, start int64
	err := c.queryRow(ctx, "SELECT budget, period, spent, period_start FROM cleanroom_budgets WHERE collaboration = ?", name).
		Scan(&b.Budget, &period, &b.Spent, &start)
	if errors.Is(err, sql.ErrNoRows) {
		return b, noBudget(name)
	}
	b.Period, b.PeriodStart = time.Duration(period), time.Unix(0, start).UTC()
	return b, err
}

// SetPrivacyBudget implements cleanroom.Budgets.
func (s *Store) SetPrivacyBudget(ctx context.Context, name string, budget int64, period time.Duration, now time.Time) error {
	return s.write(ctx, "set privacy budget", func(c conn) error {
		cur, err := readBudget(ctx, c, name)
		switch {
		case floe.KindOf(err) == floe.NotFound:
			_, err = c.exec(ctx, "INSERT INTO cleanroom_budgets (collaboration, budget, period, spent, period_start) VALUES (?, ?, ?, 0, ?)",
				name, budget, int64(period), now.UnixNano())
			return err
		case err != nil:
			return err
		}
		cur = cur.Current(now)
		if cur.Period != period {
			// A new period length starts a new period, keeping what this
			// one spent.
			cur.PeriodStart = now
		}
		_, err = c.exec(ctx, "UPDATE cleanroom_budgets SET budget = ?, period = ?, spent = ?, period_start = ? WHERE collaboration = ?",
			budget, int64(period), cur.Spent, cur.PeriodStart.UnixNano(), name)
		return err
	})
}

// PrivacyBudget implements cleanroom.Budgets.
func (s *Store) PrivacyBudget(ctx context.Context, name string, now time.Time) (cleanroom.BudgetState, error) {
	b, err := readBudget(ctx, s.read(), name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return b, err
		}
		return b, s.fail("privacy budget", err)
	}
	return b.Current(now), nil
}

// chargeSQL charges in one statement: when the period has ended it
// restarts (a whole number of periods later) with the charge alone spent;
// the WHERE clause refuses a charge that would overspend, so concurrent
// charges cannot.
const chargeSQL = `UPDATE cleanroom_budgets SET
  spent = CASE WHEN CAST(? AS BIGINT) >= period_start + period THEN CAST(? AS BIGINT) ELSE spent + CAST(? AS BIGINT) END,
  period_start = CASE WHEN CAST(? AS BIGINT) >= period_start + period
    THEN period_start + ((CAST(? AS BIGINT) - period_start) / period) * period ELSE period_start END
WHERE collaboration = ?
  AND (CASE WHEN CAST(? AS BIGINT) >= period_start + period THEN 0 ELSE spent END) + CAST(? AS BIGINT) <= budget`

// ChargePrivacyBudget implements cleanroom.Budgets.
func (s *Store) ChargePrivacyBudget(ctx context.Context, name string, amount int64, now time.Time) (cleanroom.BudgetState, error) {
	var out cleanroom.BudgetState
	t := now.UnixNano()
	err := s.write(ctx, "charge privacy budget", func(c conn) error {
		n, err := c.exec(ctx, chargeSQL, t, amount, amount, t, t, name, t, amount)
		if err != nil {
			return err
		}
		b, err := readBudget(ctx, c, name)
		if err != nil {
			return err
		}
		out = b.Current(now)
		if n == 0 {
			return floe.E(floe.Forbidden, "collaboration", "privacy budget of collaboration %q exhausted", name)
		}
		return nil
	})
	return out, err
}
