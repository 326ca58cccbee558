package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/products"
)

var _ products.Store = (*Store)(nil)

// productsLockKey is the PostgreSQL advisory lock that serializes the
// publication of new products ("prod" in ASCII), so that concurrent
// publications on several nodes cannot overshoot the limit.
const productsLockKey = 0x70726f64

func noProduct(warehouse, name string) error {
	return floe.E(floe.NotFound, "data product", "data product %q does not exist in warehouse %q", name, warehouse)
}

// PutProductVersion implements products.Store.
func (s *Store) PutProductVersion(ctx context.Context, p products.Product, keep, max int) error {
	spec, err := json.Marshal(p)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "encode data product")
	}
	err = s.write(ctx, "publish data product", func(c conn) error {
		if s.d.name == DialectPostgres {
			if _, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(productsLockKey)); err != nil {
				return err
			}
		}
		var cur sql.NullInt64
		if err := c.queryRow(ctx, "SELECT MAX(version) FROM product_versions WHERE warehouse = ? AND name = ?", p.Warehouse, p.Name).Scan(&cur); err != nil {
			return err
		}
		switch {
		case !cur.Valid && p.Version != 1:
			return floe.E(floe.NotFound, "data product", "data product %q does not exist (publish it without a previous version)", p.Name)
		case cur.Valid && p.Version == 1:
			return floe.E(floe.AlreadyExists, "data product", "data product %q already exists (version %d): publish a new version of it", p.Name, cur.Int64)
		case cur.Valid && int64(p.Version) != cur.Int64+1:
			return floe.E(floe.Conflict, "data product", "data product %q is at version %d, not %d: read it again and publish on top of it", p.Name, cur.Int64, p.Version-1)
		}
		if !cur.Valid {
			n, err := count(ctx, c, "SELECT COUNT(DISTINCT name) FROM product_versions WHERE warehouse = ?", p.Warehouse)
			if err != nil {
				return err
			}
			if n >= max {
				return floe.E(floe.Unprocessable, "data product", "limit reached: at most %d data products per warehouse", max)
			}
		}
		if _, err := c.exec(ctx, "INSERT INTO product_versions (warehouse, name, version, spec, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			p.Warehouse, p.Name, p.Version, string(spec), p.UpdatedBy, s.d.timeArg(p.UpdatedAt)); err != nil {
			return err
		}
		_, err := c.exec(ctx, "DELETE FROM product_versions WHERE warehouse = ? AND name = ? AND version <= ?", p.Warehouse, p.Name, p.Version-keep)
		return err
	})
	if uniqueViolation(err) {
		return floe.E(floe.Conflict, "data product", "data product %q was published concurrently: read it again and publish on top of it", p.Name)
	}
	return err
}

func decodeProduct(spec string) (products.Product, error) {
	var p products.Product
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return p, floe.Wrap(floe.Internal, err, "decode stored data product")
	}
	return p, nil
}

// ProductVersion implements products.Store.
func (s *Store) ProductVersion(ctx context.Context, warehouse, name string, v int) (products.Product, error) {
	q, args := "SELECT spec FROM product_versions WHERE warehouse = ? AND name = ? ORDER BY version DESC LIMIT 1", []any{warehouse, name}
	if v > 0 {
		q, args = "SELECT spec FROM product_versions WHERE warehouse = ? AND name = ? AND version = ?", []any{warehouse, name, v}
	}
	var spec string
	err := s.read().queryRow(ctx, q, args...).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		if v > 0 {
			return products.Product{}, floe.E(floe.NotFound, "data product", "data product %q has no version %d (kept or published)", name, v)
		}
		return products.Product{}, noProduct(warehouse, name)
	}
	if err != nil {
		return products.Product{}, s.fail("data product", err)
	}
	return decodeProduct(spec)
}

func (s *Store) productList(ctx context.Context, op, q string, args ...any) ([]products.Product, error) {
	out := []products.Product{}
	err := each(ctx, s.read(), q, func(scan func(...any) error) error {
		var spec string
		if err := scan(&spec); err != nil {
			return err
		}
		p, err := decodeProduct(spec)
		out = append(out, p)
		return err
	}, args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// ProductVersions implements products.Store.
func (s *Store) ProductVersions(ctx context.Context, warehouse, name string) ([]products.Product, error) {
	out, err := s.productList(ctx, "data product versions", "SELECT spec FROM product_versions WHERE warehouse = ? AND name = ? ORDER BY version DESC", warehouse, name)
	if err == nil && len(out) == 0 {
		return nil, noProduct(warehouse, name)
	}
	return out, err
}

// Products implements products.Store.
func (s *Store) Products(ctx context.Context, warehouse string) ([]products.Product, error) {
	q := "SELECT v.spec FROM product_versions v JOIN (SELECT warehouse, name, MAX(version) AS version FROM product_versions GROUP BY warehouse, name) c " +
		"ON v.warehouse = c.warehouse AND v.name = c.name AND v.version = c.version"
	var args []any
	if warehouse != "" {
		q += " WHERE v.warehouse = ?"
		args = append(args, warehouse)
	}
	return s.productList(ctx, "list data products", q+" ORDER BY v.warehouse, v.name", args...)
}

// DropProduct implements products.Store.
func (s *Store) DropProduct(ctx context.Context, warehouse, name string) error {
	return s.write(ctx, "drop data product", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM product_versions WHERE warehouse = ? AND name = ?", warehouse, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return noProduct(warehouse, name)
		}
		_, err = c.exec(ctx, "DELETE FROM product_checks WHERE warehouse = ? AND name = ?", warehouse, name)
		return err
	})
}

// AddCheckRun implements products.Store.
func (s *Store) AddCheckRun(ctx context.Context, r products.CheckRun, keep int) error {
	run, err := json.Marshal(r)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "encode check run")
	}
	return s.write(ctx, "store check run", func(c conn) error {
		if _, err := c.exec(ctx, "INSERT INTO product_checks (id, warehouse, name, version, at, status, run) VALUES (?, ?, ?, ?, ?, ?, ?)",
			r.ID, r.Warehouse, r.Product, r.Version, s.d.timeArg(r.At), r.Status, string(run)); err != nil {
			return err
		}
		// Keep the newest keep runs: delete those older than the keep-th.
		_, err := c.exec(ctx, "DELETE FROM product_checks WHERE warehouse = ? AND name = ? AND id NOT IN "+
			"(SELECT id FROM product_checks WHERE warehouse = ? AND name = ? ORDER BY at DESC, id DESC LIMIT ?)",
			r.Warehouse, r.Product, r.Warehouse, r.Product, keep)
		return err
	})
}

// CheckRuns implements products.Store.
func (s *Store) CheckRuns(ctx context.Context, warehouse, name string, limit int) ([]products.CheckRun, error) {
	out := []products.CheckRun{}
	err := each(ctx, s.read(), "SELECT run FROM product_checks WHERE warehouse = ? AND name = ? ORDER BY at DESC, id DESC LIMIT ?", func(scan func(...any) error) error {
		var run string
		if err := scan(&run); err != nil {
			return err
		}
		var r products.CheckRun
		if err := json.Unmarshal([]byte(run), &r); err != nil {
			return floe.Wrap(floe.Internal, err, "decode stored check run")
		}
		out = append(out, r)
		return nil
	}, warehouse, name, limit)
	if err != nil {
		return nil, s.fail("check runs", err)
	}
	return out, nil
}
