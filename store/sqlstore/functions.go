package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

var _ catalog.FunctionStore = (*Store)(nil)

func noFunction(id catalog.Ident) error {
	return floe.E(floe.NotFound, "function", "Function does not exist: %s", id)
}

// Function returns the pointer of function id, or NotFound (entity "function").
func (s *Store) Function(ctx context.Context, wh string, id catalog.Ident) (catalog.Entity, error) {
	e := catalog.Entity{Warehouse: wh, Ident: id, Kind: "function"}
	var at dbTime
	err := s.read().queryRow(ctx, "SELECT metadata_location, updated_at FROM functions WHERE warehouse = ? AND namespace = ? AND name = ?",
		wh, id.Namespace.Key(), id.Name).Scan(&e.MetadataLocation, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return catalog.Entity{}, noFunction(id)
	}
	if err != nil {
		return catalog.Entity{}, s.fail("function", err)
	}
	e.UpdatedAt = at.t
	return e, nil
}

// ListFunctions lists the function names of ns after `after`, in name
// order, at most limit (<= 0: all); NotFound if the namespace is missing.
func (s *Store) ListFunctions(ctx context.Context, wh string, ns catalog.Namespace, after string, limit int) ([]string, error) {
	ok, err := s.read().exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?", wh, ns.Key())
	if err != nil {
		return nil, s.fail("list functions", err)
	}
	if !ok {
		return nil, noNamespace(ns)
	}
	q := "SELECT name FROM functions WHERE warehouse = ? AND namespace = ? AND name > ? ORDER BY name"
	args := []any{wh, ns.Key(), after}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	out := []string{}
	if err := s.scanNames(ctx, q, args, func(name string) { out = append(out, name) }); err != nil {
		return nil, s.fail("list functions", err)
	}
	return out, nil
}

// SwapFunction creates (old == "") or compare-and-swaps the pointer of
// function id (see catalog.FunctionStore).
func (s *Store) SwapFunction(ctx context.Context, wh string, id catalog.Ident, old, loc string) error {
	if loc == "" {
		return floe.E(floe.Invalid, "function", "new metadata location of %s must not be empty", id)
	}
	return s.write(ctx, "swap function", func(c conn) error {
		now := s.d.timeArg(s.now())
		ok, err := c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?"+s.d.forShare, wh, id.Namespace.Key())
		if err != nil {
			return err
		}
		if !ok {
			return noNamespace(id.Namespace)
		}
		if old == "" {
			n, err := c.exec(ctx, `INSERT INTO functions (warehouse, namespace, name, metadata_location, updated_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (warehouse, namespace, name) DO NOTHING`,
				wh, id.Namespace.Key(), id.Name, loc, now)
			if s.d.foreignKeyViolation(err) {
				return noNamespace(id.Namespace)
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return floe.E(floe.AlreadyExists, "function", "Function already exists: %s", id)
			}
			return nil
		}
		n, err := c.exec(ctx, `UPDATE functions SET metadata_location = ?, updated_at = ?
			WHERE warehouse = ? AND namespace = ? AND name = ? AND metadata_location = ?`,
			loc, now, wh, id.Namespace.Key(), id.Name, old)
		if err != nil || n == 1 {
			return err
		}
		return floe.E(floe.Conflict, "commit", "Commit failed: function %s was changed or dropped concurrently", id)
	})
}

// DeleteFunction removes function id if it points at old ("" for any).
func (s *Store) DeleteFunction(ctx context.Context, wh string, id catalog.Ident, old string) (catalog.Entity, error) {
	e := catalog.Entity{Warehouse: wh, Ident: id, Kind: "function"}
	err := s.write(ctx, "delete function", func(c conn) error {
		err := c.queryRow(ctx, "SELECT metadata_location FROM functions WHERE warehouse = ? AND namespace = ? AND name = ?"+s.d.forUpdate,
			wh, id.Namespace.Key(), id.Name).Scan(&e.MetadataLocation)
		if errors.Is(err, sql.ErrNoRows) {
			return noFunction(id)
		}
		if err != nil {
			return err
		}
		if old != "" && e.MetadataLocation != old {
			return floe.E(floe.Conflict, "commit", "Commit failed: function %s was changed concurrently", id)
		}
		_, err = c.exec(ctx, "DELETE FROM functions WHERE warehouse = ? AND namespace = ? AND name = ?", wh, id.Namespace.Key(), id.Name)
		return err
	})
	if err != nil {
		return catalog.Entity{}, err
	}
	return e, nil
}
