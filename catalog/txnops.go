package catalog

import (
	"context"

	"github.com/floe-lake/floe"
)

// EntityOp is a rename or a drop that a multi-table transaction applies
// with its table commits (CommitTransactionOps): the SQL endpoint's
// BEGIN ... COMMIT blocks rename and drop tables all-or-nothing with the
// tables they change.
type EntityOp struct {
	Kind  Kind
	Ident Ident
	// RenameTo is the new name of a rename; nil for a drop.
	RenameTo *Ident
	// By, for a drop, is who drops the table, as the tombstone's owner
	// sees it (Claimant.CanRead); nil: the claimant of the context.
	By *Claimant
	// CreateAt, when set, makes the op the create of a view (Kind
	// KindView) named Ident whose metadata StageView wrote there; creates
	// apply after the renames and drops.
	CreateAt string
}

// Step is one step of a store transaction (StepStore.ApplySteps): a
// pointer swap, or a rename or drop of an entity.
type Step struct {
	// Swap, when set, is a compare-and-swap of a pointer as in
	// Store.SwapPointers.
	Swap *Swap
	// Op, when Swap is nil, is a rename or drop, as Store.RenameEntity or
	// Store.DeleteEntity (with Keep) would do it.
	Op   *EntityOp
	Keep *Tombstone
}

// StepStore is implemented by stores that apply swaps, renames and drops
// in one transaction, in the order given: all or none.
type StepStore interface {
	ApplySteps(ctx context.Context, wh string, steps []Step) error
}

// CommitTransactionOps applies table commits, renames and drops atomically:
// first the commits to existing tables (under the names they had before
// the ops), then the ops in order, then the creates (under their final
// names, which the ops may have freed). A commit's CreatedAs names the
// table a create was laid out for (its location was assigned under that
// name), when it was renamed since.
func (c *Catalog) CommitTransactionOps(ctx context.Context, wh string, commits []TableCommit, ops []EntityOp) error {
	if len(ops) == 0 {
		return c.CommitTransaction(ctx, wh, commits)
	}
	if _, ok := c.store.(StepStore); !ok {
		return floe.E(floe.Unsupported, "commit", "this catalog store cannot rename or drop tables inside a transaction")
	}
	for _, op := range ops {
		if err := op.Ident.Validate(); err != nil {
			return err
		}
		if op.RenameTo != nil {
			if err := op.RenameTo.Validate(); err != nil {
				return err
			}
		}
	}
	seen := map[string]bool{}
	for _, tc := range commits {
		k := tc.Ident.Namespace.Key() + Sep + Sep + tc.Ident.Name
		if seen[k] {
			return floe.E(floe.Invalid, "", "table %s appears more than once in the transaction", tc.Ident)
		}
		seen[k] = true
	}
	_, err := c.commitOps(ctx, wh, commits, ops)
	return err
}

// freedBy returns the names the ops free: renamed from or dropped.
func freedBy(ops []EntityOp) map[string]bool {
	out := map[string]bool{}
	for _, op := range ops {
		if op.CreateAt == "" {
			out[op.Ident.Namespace.Key()+Sep+Sep+op.Ident.Name] = true
		}
	}
	return out
}

// opSteps returns the store steps of ops: drops keep a tombstone as
// DropTable's.
func (c *Catalog) opSteps(ctx context.Context, wh string, ops []EntityOp) ([]Step, error) {
	steps := make([]Step, 0, len(ops))
	for _, op := range ops {
		if op.CreateAt != "" {
			continue
		}
		st := Step{Op: &op}
		if op.RenameTo == nil && op.Kind == KindTable {
			// The table as the ops before left it: look it up by its name
			// at the start when it was renamed before its drop.
			name := op.Ident
			for i := len(steps) - 1; i >= 0; i-- {
				if p := steps[i].Op; p.RenameTo != nil && sameIdent(*p.RenameTo, name) {
					name = p.Ident
				}
			}
			ent, err := c.store.Entity(ctx, wh, name)
			if err == nil {
				ent.Ident = op.Ident
				octx := ctx
				if op.By != nil {
					octx = WithClaimant(ctx, *op.By)
				}
				st.Keep = c.tombstoneFor(octx, ent)
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

func sameIdent(a, b Ident) bool {
	return a.Name == b.Name && a.Namespace.Key() == b.Namespace.Key()
}

// applySteps applies swaps and ops in one store transaction: swaps of
// existing tables, then the ops, then creates.
func (c *Catalog) applySteps(ctx context.Context, wh string, swaps []Swap, ops []EntityOp) error {
	opSteps, err := c.opSteps(ctx, wh, ops)
	if err != nil {
		return err
	}
	var steps, creates []Step
	for i := range swaps {
		if swaps[i].Old == "" {
			creates = append(creates, Step{Swap: &swaps[i]})
		} else {
			steps = append(steps, Step{Swap: &swaps[i]})
		}
	}
	for _, op := range ops {
		if op.CreateAt != "" {
			if op.Kind != KindView {
				return floe.E(floe.Invalid, "commit", "only views are created by an op")
			}
			creates = append(creates, Step{Swap: &Swap{Warehouse: wh, Ident: op.Ident, Kind: KindView, New: op.CreateAt}})
		}
	}
	steps = append(append(steps, opSteps...), creates...)
	return c.store.(StepStore).ApplySteps(ctx, wh, steps)
}
