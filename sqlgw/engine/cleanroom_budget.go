package engine

import (
	"context"
	"fmt"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// privacyBudgetSetting is what SHOW reads for the remaining privacy
// budget of the session's collaboration.
const privacyBudgetSetting = "floe.privacy_budget"

// privacyBudgetColumns are SHOW floe.privacy_budget's result columns.
var privacyBudgetColumns = []pgwire.Column{
	{Name: "collaboration", TypeOID: pgwire.TextOID},
	{Name: "mechanism", TypeOID: pgwire.TextOID},
	{Name: "epsilon_per_query", TypeOID: pgwire.Float8OID},
	{Name: "delta_per_query", TypeOID: pgwire.Float8OID},
	{Name: "budget_epsilon", TypeOID: pgwire.Float8OID},
	{Name: "spent_epsilon", TypeOID: pgwire.Float8OID},
	{Name: "remaining_epsilon", TypeOID: pgwire.Float8OID},
	{Name: "period", TypeOID: pgwire.TextOID},
	{Name: "period_start", TypeOID: pgwire.TimestamptzOID},
	{Name: "refresh", TypeOID: pgwire.TimestamptzOID},
}

// showPrivacyBudget answers SHOW floe.privacy_budget in a collaboration:
// one row with the mechanism and per-query charge (off: "off" and NULL),
// the budget, what is spent and remains of the current period, the
// period and when the budget is restored. Outside a collaboration, or for
// one without a budget, it is an error.
func (ss *session) showPrivacyBudget(ctx context.Context) (pgwire.Result, error) {
	if ss.pg.TxStatus() == pgwire.TxFailed {
		return nil, errTxFailed
	}
	cr := ss.e.opts.CleanRooms
	if ss.room == "" || cr == nil {
		return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: "floe.privacy_budget is shown in a collaboration: SET floe.collaboration = 'name' first"}
	}
	room, err := cr.Room(ctx, ss.sub, ss.room)
	if err != nil {
		return nil, roomRefusal(err)
	}
	b, err := cr.Budget(ctx, ss.sub, ss.room)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: fmt.Sprintf("collaboration %q has no privacy budget: its creator sets one (floe cleanroom budget NAME --set EPS)", ss.room), Err: err}
		}
		return nil, roomRefusal(err)
	}
	var mech any = "off"
	var eps, delta any
	if p := room.Collaboration.Privacy; p != nil {
		mech, eps = p.Mechanism, p.Epsilon
		if p.Mechanism == cleanroom.Gaussian {
			delta = p.Delta
		}
	}
	row := []any{b.Collaboration, mech, eps, delta, b.Epsilon, b.Spent, b.Remaining, b.PeriodText, b.PeriodStart, b.Refresh}
	return &pgwire.StaticResult{CommandTag: "SHOW", Rows: [][]any{row}}, nil
}
