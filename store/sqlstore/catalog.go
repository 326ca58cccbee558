package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/revoke"
)

// Errors with the messages Iceberg's reference implementation uses.

func noWarehouse(name string) error {
	return floe.E(floe.NotFound, "warehouse", "Warehouse does not exist: %s", name)
}

func noNamespace(ns catalog.Namespace) error {
	return floe.E(floe.NotFound, "namespace", "Namespace does not exist: %s", ns)
}

func namespaceExists(ns catalog.Namespace) error {
	return floe.E(floe.AlreadyExists, "namespace", "Namespace already exists: %s", ns)
}

func namespaceNotEmpty(ns catalog.Namespace) error {
	return floe.E(floe.NotEmpty, "namespace", "Namespace %s is not empty", ns)
}

func noEntity(kind catalog.Kind, id catalog.Ident) error {
	if kind == catalog.KindView {
		return floe.E(floe.NotFound, "view", "View does not exist: %s", id)
	}
	return floe.E(floe.NotFound, "table", "Table does not exist: %s", id)
}

func entityExists(kind catalog.Kind, id catalog.Ident) error {
	if kind == catalog.KindView {
		return floe.E(floe.AlreadyExists, "view", "View already exists: %s", id)
	}
	return floe.E(floe.AlreadyExists, "table", "Table already exists: %s", id)
}

func checkKind(kind catalog.Kind) error {
	if kind != catalog.KindTable && kind != catalog.KindView {
		return floe.E(floe.Invalid, "", "unknown entity kind %q", kind)
	}
	return nil
}

// Warehouse returns the named warehouse, or NotFound.
func (s *Store) Warehouse(ctx context.Context, name string) (catalog.Warehouse, error) {
	w := catalog.Warehouse{Name: name}
	err := s.read().queryRow(ctx, "SELECT location FROM warehouses WHERE name = ?", name).Scan(&w.Location)
	if errors.Is(err, sql.ErrNoRows) {
		return catalog.Warehouse{}, noWarehouse(name)
	}
	if err != nil {
		return catalog.Warehouse{}, s.fail("warehouse", err)
	}
	return w, nil
}

// PutWarehouse creates or updates a warehouse.
func (s *Store) PutWarehouse(ctx context.Context, w catalog.Warehouse) error {
	if w.Name == "" {
		return floe.E(floe.Invalid, "warehouse", "warehouse name must not be empty")
	}
	return s.write(ctx, "put warehouse", func(c conn) error {
		_, err := c.exec(ctx, `INSERT INTO warehouses (name, location) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET location = excluded.location`, w.Name, w.Location)
		return err
	})
}

// CreateNamespace creates ns; NotFound if the warehouse or (for a nested
// namespace) the parent namespace is missing, AlreadyExists if ns exists.
func (s *Store) CreateNamespace(ctx context.Context, wh string, ns catalog.Namespace, props map[string]string) error {
	if len(ns) == 0 {
		return floe.E(floe.Invalid, "namespace", "namespace must have at least one level")
	}
	if props == nil {
		props = map[string]string{}
	}
	js, err := json.Marshal(props)
	if err != nil {
		return s.fail("create namespace", err)
	}
	parent := ns.Parent()
	return s.write(ctx, "create namespace", func(c conn) error {
		ok, err := c.exists(ctx, "SELECT 1 FROM warehouses WHERE name = ?", wh)
		if err != nil {
			return err
		}
		if !ok {
			return noWarehouse(wh)
		}
		if len(parent) > 0 {
			// The share lock keeps a concurrent DropNamespace of the parent
			// from missing this child.
			ok, err := c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?"+s.d.forShare, wh, parent.Key())
			if err != nil {
				return err
			}
			if !ok {
				return noNamespace(parent)
			}
		}
		n, err := c.exec(ctx, `INSERT INTO namespaces (warehouse, name, parent, properties) VALUES (?, ?, ?, ?)
			ON CONFLICT (warehouse, name) DO NOTHING`, wh, ns.Key(), parent.Key(), string(js))
		if err != nil {
			return err
		}
		if n == 0 {
			return namespaceExists(ns)
		}
		return nil
	})
}

// NamespaceProperties returns the properties of ns, or NotFound.
func (s *Store) NamespaceProperties(ctx context.Context, wh string, ns catalog.Namespace) (map[string]string, error) {
	var js string
	err := s.read().queryRow(ctx, "SELECT properties FROM namespaces WHERE warehouse = ? AND name = ?", wh, ns.Key()).Scan(&js)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, noNamespace(ns)
	}
	if err != nil {
		return nil, s.fail("namespace properties", err)
	}
	props, err := decodeProperties(js)
	if err != nil {
		return nil, s.fail("namespace properties", err)
	}
	return props, nil
}

func decodeProperties(js string) (map[string]string, error) {
	props := map[string]string{}
	if err := json.Unmarshal([]byte(js), &props); err != nil {
		return nil, fmt.Errorf("decode namespace properties: %w", err)
	}
	if props == nil { // the JSON was null
		props = map[string]string{}
	}
	return props, nil
}

// The listing queries are keyset-paginated: each page starts after the last
// key of the previous one, through the indexes namespaces_by_parent and
// entities_by_kind, so a page costs the same wherever it is.
const (
	listNamespacesQuery = "SELECT name FROM namespaces WHERE warehouse = ? AND parent = ? AND name > ? ORDER BY name"
	listEntitiesQuery   = "SELECT name FROM entities WHERE warehouse = ? AND namespace = ? AND kind = ? AND name > ? ORDER BY name"
)

// ListNamespaces lists the direct children of parent (top level when parent
// is empty) whose key sorts after `after`, in key order, at most limit of
// them (limit <= 0: all). It does not check that parent exists.
func (s *Store) ListNamespaces(ctx context.Context, wh string, parent catalog.Namespace, after string, limit int) ([]catalog.Namespace, error) {
	q := listNamespacesQuery
	args := []any{wh, parent.Key(), after}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	out := []catalog.Namespace{}
	err := s.scanNames(ctx, q, args, func(name string) { out = append(out, catalog.ParseNamespaceKey(name)) })
	if err != nil {
		return nil, s.fail("list namespaces", err)
	}
	return out, nil
}

func (s *Store) scanNames(ctx context.Context, q string, args []any, fn func(string)) error {
	rows, err := s.read().query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		fn(name)
	}
	return rows.Err()
}

// UpdateNamespaceProperties applies fn to the properties of ns inside one
// transaction, NotFound if ns is missing. fn may run more than once if the
// transaction is retried, and must not call the store. An error from fn
// aborts the update and is returned unchanged.
func (s *Store) UpdateNamespaceProperties(ctx context.Context, wh string, ns catalog.Namespace, fn func(map[string]string) error) error {
	var fnErr error
	err := s.write(ctx, "update namespace properties", func(c conn) error {
		var js string
		err := c.queryRow(ctx, "SELECT properties FROM namespaces WHERE warehouse = ? AND name = ?"+s.d.forUpdate, wh, ns.Key()).Scan(&js)
		if errors.Is(err, sql.ErrNoRows) {
			return noNamespace(ns)
		}
		if err != nil {
			return err
		}
		props, err := decodeProperties(js)
		if err != nil {
			return err
		}
		if err := fn(props); err != nil {
			fnErr = err
			return err
		}
		b, err := json.Marshal(props)
		if err != nil {
			return fmt.Errorf("encode namespace properties: %w", err)
		}
		_, err = c.exec(ctx, "UPDATE namespaces SET properties = ? WHERE warehouse = ? AND name = ?", string(b), wh, ns.Key())
		return err
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// DropNamespace removes an empty namespace: NotFound if it is missing,
// NotEmpty if it holds tables, views or namespaces.
func (s *Store) DropNamespace(ctx context.Context, wh string, ns catalog.Namespace) error {
	key := ns.Key()
	return s.write(ctx, "drop namespace", func(c conn) error {
		ok, err := c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?"+s.d.forUpdate, wh, key)
		if err != nil {
			return err
		}
		if !ok {
			return noNamespace(ns)
		}
		full, err := c.exists(ctx, "SELECT 1 FROM entities WHERE warehouse = ? AND namespace = ? LIMIT 1", wh, key)
		if err != nil {
			return err
		}
		if !full {
			full, err = c.exists(ctx, "SELECT 1 FROM functions WHERE warehouse = ? AND namespace = ? LIMIT 1", wh, key)
			if err != nil {
				return err
			}
		}
		if !full {
			full, err = c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND parent = ? LIMIT 1", wh, key)
			if err != nil {
				return err
			}
		}
		if full {
			return namespaceNotEmpty(ns)
		}
		_, err = c.exec(ctx, "DELETE FROM namespaces WHERE warehouse = ? AND name = ?", wh, key)
		if s.d.foreignKeyViolation(err) {
			return namespaceNotEmpty(ns)
		}
		return err
	})
}

// Entity returns the table or view named id (either kind), or NotFound
// (entity "table").
func (s *Store) Entity(ctx context.Context, wh string, id catalog.Ident) (catalog.Entity, error) {
	e := catalog.Entity{Warehouse: wh, Ident: id}
	var kind string
	var at dbTime
	err := s.read().queryRow(ctx, "SELECT kind, metadata_location, updated_at FROM entities WHERE warehouse = ? AND namespace = ? AND name = ?",
		wh, id.Namespace.Key(), id.Name).Scan(&kind, &e.MetadataLocation, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return catalog.Entity{}, floe.E(floe.NotFound, "table", "Table or view does not exist: %s", id)
	}
	if err != nil {
		return catalog.Entity{}, s.fail("entity", err)
	}
	e.Kind, e.UpdatedAt = catalog.Kind(kind), at.t
	return e, nil
}

// ListEntities lists the names of the given kind in ns after `after`, in
// name order, at most limit (<= 0: all). NotFound if ns is missing.
func (s *Store) ListEntities(ctx context.Context, wh string, ns catalog.Namespace, kind catalog.Kind, after string, limit int) ([]string, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	ok, err := s.read().exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?", wh, ns.Key())
	if err != nil {
		return nil, s.fail("list entities", err)
	}
	if !ok {
		return nil, noNamespace(ns)
	}
	q := listEntitiesQuery
	args := []any{wh, ns.Key(), string(kind), after}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	out := []string{}
	if err := s.scanNames(ctx, q, args, func(name string) { out = append(out, name) }); err != nil {
		return nil, s.fail("list entities", err)
	}
	return out, nil
}

// SwapPointers applies all swaps atomically or none. A swap with Old == ""
// creates the entity: NotFound (entity "namespace") if its namespace is
// missing, AlreadyExists (entity "table" or "view", the kind that holds the
// name) if the name is taken. Any other swap needs the entity of that kind
// to point at Old: Conflict (entity "commit") if it does not or is gone,
// NotFound if the namespace is gone. Swaps are applied in key order so that
// concurrent multi-table commits lock rows in the same order.
func (s *Store) SwapPointers(ctx context.Context, swaps []catalog.Swap) error {
	if len(swaps) == 0 {
		return nil
	}
	sorted := slices.Clone(swaps)
	for _, sw := range sorted {
		if err := checkKind(sw.Kind); err != nil {
			return err
		}
		if sw.New == "" {
			return floe.E(floe.Invalid, "commit", "new metadata location of %s must not be empty", sw.Ident)
		}
	}
	slices.SortFunc(sorted, func(a, b catalog.Swap) int {
		return cmp.Or(cmp.Compare(a.Warehouse, b.Warehouse),
			cmp.Compare(a.Ident.Namespace.Key(), b.Ident.Namespace.Key()),
			cmp.Compare(a.Ident.Name, b.Ident.Name))
	})
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if a.Warehouse == b.Warehouse && a.Ident.Namespace.Key() == b.Ident.Namespace.Key() && a.Ident.Name == b.Ident.Name {
			return floe.E(floe.Invalid, "commit", "%s appears more than once", b.Ident)
		}
	}
	return s.write(ctx, "swap pointers", func(c conn) error {
		now := s.d.timeArg(s.now())
		for _, sw := range sorted {
			if err := s.swap(ctx, c, sw, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) swap(ctx context.Context, c conn, sw catalog.Swap, now any) error {
	id := sw.Ident
	if sw.ClaimLocation && sw.Location != "" {
		if err := s.claimLocation(ctx, c, sw.Warehouse, id, sw.Location, sw.Claimant); err != nil {
			return err
		}
	}
	if sw.Old == "" {
		return s.insertEntity(ctx, c, sw.Warehouse, id, sw.Kind, sw.New, sw.Location, now)
	}
	n, err := c.exec(ctx, `UPDATE entities SET metadata_location = ?, updated_at = ?, location = COALESCE(?, location)
		WHERE warehouse = ? AND namespace = ? AND name = ? AND kind = ? AND metadata_location = ?`,
		sw.New, now, nullable(sw.Location), sw.Warehouse, id.Namespace.Key(), id.Name, string(sw.Kind), sw.Old)
	if err != nil || n == 1 {
		return err
	}
	var kind string
	err = c.queryRow(ctx, "SELECT kind FROM entities WHERE warehouse = ? AND namespace = ? AND name = ?",
		sw.Warehouse, id.Namespace.Key(), id.Name).Scan(&kind)
	switch {
	case err == nil:
		return floe.E(floe.Conflict, "commit", "Commit failed: %s %s was changed concurrently", sw.Kind, id)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	ok, err := c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?", sw.Warehouse, id.Namespace.Key())
	if err != nil {
		return err
	}
	if !ok {
		return noNamespace(id.Namespace)
	}
	return floe.E(floe.Conflict, "commit", "Commit failed: %s %s was dropped concurrently", sw.Kind, id)
}

// insertEntity creates an entity: NotFound if the namespace is missing,
// AlreadyExists if the name is taken by a table or a view.
func (s *Store) insertEntity(ctx context.Context, c conn, wh string, id catalog.Ident, kind catalog.Kind, loc, tableLoc string, now any) error {
	return s.upsertEntity(ctx, c, wh, id, kind, loc, tableLoc, now, "DO NOTHING")
}

// nullable maps "" to SQL NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// overlap returns the SQL condition on column col for a location at,
// below or above loc, and its arguments.
func overlap(col, loc string) (string, []any) {
	loc = strings.TrimSuffix(loc, "/")
	// Below loc: keys in [loc+"/", loc+"0"), '0' being the byte after '/'.
	args := []any{loc + "/", loc + "0", loc}
	in := "?"
	// Ancestors: s3://b/a/c -> s3://b/a, s3://b (the scheme's "//" is not a level).
	start := strings.Index(loc, "://") + 3
	for p := loc; ; {
		i := strings.LastIndexByte(p, '/')
		if i < start {
			break
		}
		p = p[:i]
		args = append(args, p)
		in += ", ?"
	}
	return "((" + col + " >= ? AND " + col + " < ?) OR " + col + " IN (" + in + "))", args
}

// claimLocation refuses loc when another table of wh lies at, above or
// below it: vended credentials are scoped to a table's location prefix,
// so overlapping tables would read each other's files. It refuses it too
// when it overlaps a tombstone that by neither owns nor may override (an
// administrator), and consumes the tombstones it may. Claims in one
// warehouse are serialized (the warehouse row is locked on PostgreSQL;
// SQLite has one writer).
func (s *Store) claimLocation(ctx context.Context, c conn, wh string, id catalog.Ident, loc string, by catalog.Claimant) error {
	if _, err := c.exists(ctx, "SELECT 1 FROM warehouses WHERE name = ?"+s.d.forUpdate, wh); err != nil {
		return err
	}
	loc = strings.TrimSuffix(loc, "/")
	cond, oargs := overlap("location", loc)
	args := append([]any{wh, id.Namespace.Key(), id.Name}, oargs...)
	var ns, name, other string
	err := c.queryRow(ctx, `SELECT namespace, name, location FROM entities
		WHERE warehouse = ? AND kind = 'table' AND NOT (namespace = ? AND name = ?)
		AND `+cond+` LIMIT 1`, args...).Scan(&ns, &name, &other)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		owner := catalog.Ident{Namespace: catalog.ParseNamespaceKey(ns), Name: name}
		return floe.E(floe.Invalid, "location", "location %s overlaps the files of table %s (%s): a table's location must not contain or lie inside another table's", loc, owner, other)
	}
	if err := s.purgeRefusal(ctx, c, wh, loc); err != nil {
		return err
	}
	tombs, err := s.tombstonesOver(ctx, c, wh, loc)
	if err != nil {
		return err
	}
	for _, t := range tombs {
		if !t.Permits(by) {
			return t.Refusal(loc)
		}
	}
	for _, t := range tombs {
		if _, err := c.exec(ctx, "DELETE FROM tombstones WHERE warehouse = ? AND location = ?", wh, t.Location); err != nil {
			return err
		}
	}
	return nil
}

const tombstoneColumns = "warehouse, location, namespace, name, owner, dropped_at"

func scanTombstone(scan func(...any) error) (catalog.Tombstone, error) {
	var t catalog.Tombstone
	var ns string
	var at dbTime
	if err := scan(&t.Warehouse, &t.Location, &ns, &t.Ident.Name, &t.Owner, &at); err != nil {
		return t, err
	}
	t.Ident.Namespace, t.DroppedAt = catalog.ParseNamespaceKey(ns), at.t
	return t, nil
}

func (s *Store) tombstonesOver(ctx context.Context, c conn, wh, loc string) ([]catalog.Tombstone, error) {
	cond, args := overlap("location", loc)
	var out []catalog.Tombstone
	err := each(ctx, c, "SELECT "+tombstoneColumns+" FROM tombstones WHERE warehouse = ? AND "+cond+" ORDER BY location",
		func(scan func(...any) error) error {
			t, err := scanTombstone(scan)
			out = append(out, t)
			return err
		}, append([]any{wh}, args...)...)
	return out, err
}

// TombstonesOver returns the tombstones of wh at, inside or above loc, in
// location order.
func (s *Store) TombstonesOver(ctx context.Context, wh, loc string) ([]catalog.Tombstone, error) {
	out, err := s.tombstonesOver(ctx, s.read(), wh, loc)
	if err != nil {
		return nil, s.fail("tombstones", err)
	}
	return out, nil
}

// Tombstones lists the tombstones of wh in location order after the
// location `after`, at most limit (<= 0: all).
func (s *Store) Tombstones(ctx context.Context, wh, after string, limit int) ([]catalog.Tombstone, error) {
	q := "SELECT " + tombstoneColumns + " FROM tombstones WHERE warehouse = ? AND location > ? ORDER BY location"
	args := []any{wh, after}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	out := []catalog.Tombstone{}
	err := each(ctx, s.read(), q, func(scan func(...any) error) error {
		t, err := scanTombstone(scan)
		out = append(out, t)
		return err
	}, args...)
	if err != nil {
		return nil, s.fail("tombstones", err)
	}
	return out, nil
}

// DeleteTombstone removes the tombstone of wh at loc and returns it:
// NotFound (entity "tombstone") if there is none.
func (s *Store) DeleteTombstone(ctx context.Context, wh, loc string) (catalog.Tombstone, error) {
	var t catalog.Tombstone
	err := s.write(ctx, "delete tombstone", func(c conn) error {
		var err error
		t, err = scanTombstone(c.queryRow(ctx, "DELETE FROM tombstones WHERE warehouse = ? AND location = ? RETURNING "+tombstoneColumns,
			wh, strings.TrimSuffix(loc, "/")).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return floe.E(floe.NotFound, "tombstone", "no dropped table's location %s is kept in warehouse %s", loc, wh)
		}
		return err
	})
	if err != nil {
		return catalog.Tombstone{}, err
	}
	return t, nil
}

// upsertEntity inserts an entity with the given ON CONFLICT action; a
// conflict the action does not resolve is AlreadyExists.
func (s *Store) upsertEntity(ctx context.Context, c conn, wh string, id catalog.Ident, kind catalog.Kind, loc, tableLoc string, now any, onConflict string) error {
	// The share lock keeps a concurrent DropNamespace from missing the new
	// entity (the foreign key would catch it too, later and less clearly).
	ok, err := c.exists(ctx, "SELECT 1 FROM namespaces WHERE warehouse = ? AND name = ?"+s.d.forShare, wh, id.Namespace.Key())
	if err != nil {
		return err
	}
	if !ok {
		return noNamespace(id.Namespace)
	}
	n, err := c.exec(ctx, `INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at, location)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (warehouse, namespace, name) `+onConflict,
		wh, id.Namespace.Key(), id.Name, string(kind), loc, now, nullable(tableLoc))
	if s.d.foreignKeyViolation(err) {
		return noNamespace(id.Namespace)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return s.taken(ctx, c, wh, id)
	}
	return nil
}

// taken returns AlreadyExists for the entity holding id.
func (s *Store) taken(ctx context.Context, c conn, wh string, id catalog.Ident) error {
	var kind string
	err := c.queryRow(ctx, "SELECT kind FROM entities WHERE warehouse = ? AND namespace = ? AND name = ?",
		wh, id.Namespace.Key(), id.Name).Scan(&kind)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return entityExists(catalog.Kind(kind), id)
}

// ReplaceEntity points id at loc whatever it pointed at before, creating it
// if needed: NotFound if the namespace is missing, AlreadyExists if an
// entity of the other kind holds the name.
func (s *Store) ReplaceEntity(ctx context.Context, wh string, id catalog.Ident, kind catalog.Kind, loc, tableLoc string, by catalog.Claimant) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return s.write(ctx, "replace entity", func(c conn) error {
		if tableLoc != "" {
			if err := s.claimLocation(ctx, c, wh, id, tableLoc, by); err != nil {
				return err
			}
		}
		return s.upsertEntity(ctx, c, wh, id, kind, loc, tableLoc, s.d.timeArg(s.now()), `DO UPDATE
			SET metadata_location = excluded.metadata_location, updated_at = excluded.updated_at, location = excluded.location
			WHERE entities.kind = excluded.kind`)
	})
}

// DeleteEntity removes the entity of the given kind and returns what it
// pointed at; NotFound (entity "table" or "view") if there is no entity of
// that kind named id. A non-nil keep is stored as a tombstone in the same
// transaction (replacing one at the same location), its Location defaulting
// to the table's stored location; nothing is kept if both are empty. With
// keep.Purge a purge job for that location is queued too.
func (s *Store) DeleteEntity(ctx context.Context, wh string, id catalog.Ident, kind catalog.Kind, keep *catalog.Tombstone) (catalog.Entity, error) {
	if err := checkKind(kind); err != nil {
		return catalog.Entity{}, err
	}
	e := catalog.Entity{Warehouse: wh, Ident: id, Kind: kind}
	err := s.write(ctx, "delete entity", func(c conn) error {
		return s.deleteEntity(ctx, c, &e, keep)
	})
	if err != nil {
		return catalog.Entity{}, err
	}
	return e, nil
}

// deleteEntity is DeleteEntity inside the write transaction c.
func (s *Store) deleteEntity(ctx context.Context, c conn, e *catalog.Entity, keep *catalog.Tombstone) error {
	wh, id, kind := e.Warehouse, e.Ident, e.Kind
	{
		var at dbTime
		var stored sql.NullString
		err := c.queryRow(ctx, `DELETE FROM entities WHERE warehouse = ? AND namespace = ? AND name = ? AND kind = ?
			RETURNING metadata_location, updated_at, location`, wh, id.Namespace.Key(), id.Name, string(kind)).Scan(&e.MetadataLocation, &at, &stored)
		if errors.Is(err, sql.ErrNoRows) {
			return noEntity(kind, id)
		}
		if err != nil {
			return err
		}
		e.UpdatedAt = at.t
		if kind == catalog.KindTable {
			// The dropper's own credentials are spared when it could read
			// the whole table anyway: clients purge a dropped table's files
			// with them (Spark's DROP TABLE ... PURGE reads the manifests
			// and deletes the files after the drop).
			exempt := ""
			if cl := catalog.ClaimantOf(ctx); cl.Principal != "" && (cl.CanRead || cl.Admin) {
				exempt = cl.Principal
			}
			if err := s.revokeExempt(ctx, c, revoke.Table, id.String(), exempt, s.now().Add(revocationTTL)); err != nil {
				return err
			}
		}
		if keep == nil {
			return nil
		}
		loc := keep.Location
		if loc == "" {
			loc = stored.String
		}
		if loc = strings.TrimSuffix(loc, "/"); loc == "" {
			return nil
		}
		_, err = c.exec(ctx, `INSERT INTO tombstones (`+tombstoneColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (warehouse, location) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
			owner = excluded.owner, dropped_at = excluded.dropped_at`,
			wh, loc, id.Namespace.Key(), id.Name, keep.Owner, s.d.timeArg(s.now()))
		if err != nil || !keep.Purge || kind != catalog.KindTable {
			return err
		}
		return s.queuePurge(ctx, c, wh, id, loc, e.MetadataLocation)
	}
}

// RenameEntity moves the entity of the given kind from `from` to `to`:
// NotFound (entity "table" or "view") if there is no such entity, NotFound
// (entity "namespace") if the destination namespace is missing,
// AlreadyExists (the kind holding the name) if `to` is taken.
func (s *Store) RenameEntity(ctx context.Context, wh string, from, to catalog.Ident, kind catalog.Kind) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return s.write(ctx, "rename entity", func(c conn) error {
		return s.renameEntity(ctx, c, wh, from, to, kind)
	})
}

// renameEntity is RenameEntity inside the write transaction c.
func (s *Store) renameEntity(ctx context.Context, c conn, wh string, from, to catalog.Ident, kind catalog.Kind) error {
	{
		var loc string
		var tableLoc sql.NullString
		err := c.queryRow(ctx, "SELECT metadata_location, location FROM entities WHERE warehouse = ? AND namespace = ? AND name = ? AND kind = ?"+s.d.forUpdate,
			wh, from.Namespace.Key(), from.Name, string(kind)).Scan(&loc, &tableLoc)
		if errors.Is(err, sql.ErrNoRows) {
			return noEntity(kind, from)
		}
		if err != nil {
			return err
		}
		if err := s.insertEntity(ctx, c, wh, to, kind, loc, tableLoc.String, s.d.timeArg(s.now())); err != nil {
			return err
		}
		if kind == catalog.KindTable {
			if err := s.revokeIn(ctx, c, revoke.Table, from.String(), s.now().Add(revocationTTL)); err != nil {
				return err
			}
		}
		_, err = c.exec(ctx, "DELETE FROM entities WHERE warehouse = ? AND namespace = ? AND name = ?",
			wh, from.Namespace.Key(), from.Name)
		return err
	}
}

// ApplySteps implements catalog.StepStore: swaps (as SwapPointers), renames
// (as RenameEntity) and drops (as DeleteEntity) of wh in one transaction,
// in the order given; the first failure undoes them all.
func (s *Store) ApplySteps(ctx context.Context, wh string, steps []catalog.Step) error {
	for _, st := range steps {
		switch {
		case st.Swap != nil:
			if err := checkKind(st.Swap.Kind); err != nil {
				return err
			}
			if st.Swap.New == "" || st.Swap.Warehouse != wh {
				return floe.E(floe.Invalid, "commit", "invalid swap of %s", st.Swap.Ident)
			}
		case st.Op != nil:
			if err := checkKind(st.Op.Kind); err != nil {
				return err
			}
		default:
			return floe.E(floe.Invalid, "commit", "empty transaction step")
		}
	}
	return s.write(ctx, "apply steps", func(c conn) error {
		now := s.d.timeArg(s.now())
		for _, st := range steps {
			var err error
			switch {
			case st.Swap != nil:
				err = s.swap(ctx, c, *st.Swap, now)
			case st.Op.RenameTo != nil:
				err = s.renameEntity(ctx, c, wh, st.Op.Ident, *st.Op.RenameTo, st.Op.Kind)
			default:
				e := catalog.Entity{Warehouse: wh, Ident: st.Op.Ident, Kind: st.Op.Kind}
				err = s.deleteEntity(ctx, c, &e, st.Keep)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}
