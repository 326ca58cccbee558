package engine

import (
	"context"

	"github.com/apache/iceberg-go/table"
)

// PlanForTest plans every file of a snapshot as a query would (through the
// plan cache, from the parent's plan when the snapshot only appended).
func (e *Engine) PlanForTest(ctx context.Context, tbl *table.Table, snapshot int64) ([]table.FileScanTask, error) {
	return e.planFiles(ctx, tbl, snapshot, nil)
}

// ForgetPlanForTest drops the cached plan of a snapshot (no row filter).
func (e *Engine) ForgetPlanForTest(tbl *table.Table, snapshot int64) {
	e.plans.c.Remove(planKey{table: tbl.Metadata().TableUUID().String(), snapshot: snapshot})
}

// ViewTreesForTest is how many parsed view expansions the engine keeps.
func (e *Engine) ViewTreesForTest() int { return e.trees.Len() }

// MaxViewTrees is the bound of the engine's cache of view trees.
const MaxViewTrees = maxViewTrees
