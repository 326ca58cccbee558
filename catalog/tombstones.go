package catalog

import (
	"context"
	"fmt"

	"github.com/floe-lake/floe"
)

type claimantKey struct{}

// WithClaimant returns ctx carrying who the catalog acts for when it
// claims or gives up a table location (creates, registers, commits that
// move a table, drops). The edges (REST catalog, management API) set it
// from the authenticated caller; without it a caller is nobody and no
// administrator.
func WithClaimant(ctx context.Context, c Claimant) context.Context {
	return context.WithValue(ctx, claimantKey{}, c)
}

// ClaimantOf returns the claimant set by WithClaimant, or the zero
// Claimant (no principal, not an administrator).
func ClaimantOf(ctx context.Context) Claimant {
	c, _ := ctx.Value(claimantKey{}).(Claimant)
	return c
}

// Lister is implemented by FileIOs that can tell whether any object lies
// under a location prefix, with one listing of at most one key. The
// catalog needs it to let a non-administrator choose a table's location:
// only an empty one, so that a table cannot be laid over files its
// creator may not read. Without it such locations are refused.
type Lister interface {
	// HasObjects reports whether any object's key lies under prefix taken
	// as a directory ("s3://b/t" covers "t/x" but not "t2").
	HasObjects(ctx context.Context, prefix string) (bool, error)
}

// checkFreshLocation refuses a non-administrator a table location that
// already holds objects, unless it owns a tombstone at or above it (the
// files are its own dropped table's) or loc is the location Floe assigns
// to the table (its name and UUID; no other table's data lies there).
func (c *Catalog) checkFreshLocation(ctx context.Context, w Warehouse, id Ident, loc, assigned string) error {
	by := ClaimantOf(ctx)
	if by.Admin || loc == assigned {
		return nil
	}
	tombs, err := c.store.TombstonesOver(ctx, w.Name, loc)
	if err != nil {
		return err
	}
	owned := false
	for _, t := range tombs {
		if !t.Permits(by) {
			return t.Refusal(loc) // the clearer reason; the store checks it again
		}
		owned = owned || within(t.Location, loc)
	}
	if owned {
		return nil
	}
	l, ok := c.io.(Lister)
	if !ok {
		return floe.E(floe.Forbidden, "location", "table %s: only an administrator may choose a table location on this storage", id)
	}
	full, err := l.HasObjects(ctx, loc)
	if err != nil {
		return fmt.Errorf("check location %s: %w", loc, err)
	}
	if full {
		return floe.E(floe.Forbidden, "location", "table %s: location %s is not empty: only an administrator may lay a table over existing files", id, loc)
	}
	return nil
}

// Tombstones lists the kept locations of tables dropped without deleting
// their files, in location order.
func (c *Catalog) Tombstones(ctx context.Context, wh string) ([]Tombstone, error) {
	if _, err := c.store.Warehouse(ctx, wh); err != nil {
		return nil, err
	}
	return c.store.Tombstones(ctx, wh, "", 0)
}

// TombstonesPage lists at most limit tombstones of wh in location order
// after the location `after` (NotFound for a missing warehouse).
func (c *Catalog) TombstonesPage(ctx context.Context, wh, after string, limit int) ([]Tombstone, error) {
	if _, err := c.store.Warehouse(ctx, wh); err != nil {
		return nil, err
	}
	return c.store.Tombstones(ctx, wh, after, limit)
}

// ReleaseTombstone frees the kept location loc of a dropped table, so that
// any principal may place a table there again. Only the tombstone's owner
// (by ClaimantOf(ctx)) or an administrator may: Forbidden otherwise,
// NotFound (entity "tombstone") if there is none at loc. The files stay.
func (c *Catalog) ReleaseTombstone(ctx context.Context, wh, loc string) (Tombstone, error) {
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return Tombstone{}, err
	}
	n, err := c.checkLocation(w, loc)
	if err != nil {
		return Tombstone{}, err
	}
	by := ClaimantOf(ctx)
	if !by.Admin {
		tombs, err := c.store.TombstonesOver(ctx, wh, n)
		if err != nil {
			return Tombstone{}, err
		}
		for _, t := range tombs {
			if t.Location == n && !t.Permits(by) {
				return Tombstone{}, floe.E(floe.Forbidden, "tombstone", "only the previous owner of dropped table %s or an administrator may release its location %s", t.Ident, n)
			}
		}
	}
	return c.store.DeleteTombstone(ctx, wh, n)
}
