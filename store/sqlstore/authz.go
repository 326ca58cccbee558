package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"slices"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

var _ authz.Store = (*Store)(nil)

// bumpAuthz increments the authorization version; every authorization
// mutation calls it first in its transaction, which on PostgreSQL also
// serializes them on the counter row.
func bumpAuthz(ctx context.Context, c conn) error {
	_, err := c.exec(ctx, "UPDATE authz_version SET version = version + 1 WHERE id = 1")
	return err
}

// AuthzVersion returns the authorization version: one primary-key read.
func (s *Store) AuthzVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.read().queryRow(ctx, "SELECT version FROM authz_version WHERE id = 1").Scan(&v); err != nil {
		return 0, s.fail("authz version", err)
	}
	return v, nil
}

// LoadAuthz reads all roles, memberships, grants and tags and the version
// they are at, in one read transaction (a consistent snapshot).
func (s *Store) LoadAuthz(ctx context.Context) (*authz.Snapshot, error) {
	var opts *sql.TxOptions
	if s.d.name == DialectPostgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := s.rdb.BeginTx(ctx, opts)
	if err != nil {
		return nil, s.fail("load authz", err)
	}
	defer func() { _ = tx.Rollback() }()
	snap, err := loadAuthz(ctx, conn{q: tx, d: s.d})
	if err != nil {
		return nil, s.fail("load authz", err)
	}
	return snap, nil
}

func loadAuthz(ctx context.Context, c conn) (*authz.Snapshot, error) {
	snap := &authz.Snapshot{Roles: []authz.RoleInfo{}, Members: []authz.Membership{}, Grants: []authz.Grant{}, Tags: []authz.Tag{},
		Bindings: []authz.ColumnBinding{}}
	if err := c.queryRow(ctx, "SELECT version FROM authz_version WHERE id = 1").Scan(&snap.Version); err != nil {
		return nil, err
	}
	err := each(ctx, c, "SELECT name, description, created_at FROM authz_roles ORDER BY name", func(scan func(...any) error) error {
		var r authz.RoleInfo
		var at dbTime
		if err := scan(&r.Name, &r.Description, &at); err != nil {
			return err
		}
		r.CreatedAt = at.t
		snap.Roles = append(snap.Roles, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, c, "SELECT role, principal FROM authz_role_members ORDER BY role, principal", func(scan func(...any) error) error {
		var m authz.Membership
		if err := scan(&m.Role, &m.Principal); err != nil {
			return err
		}
		snap.Members = append(snap.Members, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, c, `SELECT `+grantColumns+` FROM authz_grants ORDER BY id`, func(scan func(...any) error) error {
		g, err := scanGrant(scan)
		if err != nil {
			return err
		}
		snap.Grants = append(snap.Grants, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, c, `SELECT warehouse, securable_kind, namespace, name, column_name, tag_key, tag_value FROM authz_tags
		ORDER BY warehouse, securable_kind, namespace, name, column_name, tag_key`, func(scan func(...any) error) error {
		var t authz.Tag
		var kind, nsKey string
		if err := scan(&t.On.Warehouse, &kind, &nsKey, &t.On.Name, &t.Column, &t.Key, &t.Value); err != nil {
			return err
		}
		var err error
		if t.On.Kind, err = authz.ParseKind(kind); err != nil {
			return err
		}
		t.On.Namespace = catalog.ParseNamespaceKey(nsKey)
		snap.Tags = append(snap.Tags, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, c, `SELECT scope, table_uuid, column_name, field_id FROM authz_column_bindings
		ORDER BY scope, table_uuid, column_name`, func(scan func(...any) error) error {
		var b authz.ColumnBinding
		if err := scan(&b.Scope, &b.Table, &b.Name, &b.FieldID); err != nil {
			return err
		}
		snap.Bindings = append(snap.Bindings, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// grantColumns are the columns scanGrant reads, in its order.
const grantColumns = `id, grantee_kind, grantee, privilege, securable_kind, warehouse, namespace, name,
	tag_expr, all_tables, filter, created_at, created_by`

// PutColumnBindings stores column bindings, keeping any stored before for
// the same scope, table and name, and increments the authorization version
// only when it stored one.
func (s *Store) PutColumnBindings(ctx context.Context, bs []authz.ColumnBinding) error {
	if len(bs) == 0 {
		return nil
	}
	for _, b := range bs {
		if b.Scope == "" || b.Table == "" || b.Name == "" {
			return floe.E(floe.Invalid, "column binding", "a column binding needs a scope, a table and a name")
		}
	}
	return s.write(ctx, "put column bindings", func(c conn) error {
		var added int64
		for _, b := range bs {
			n, err := c.exec(ctx, `INSERT INTO authz_column_bindings (scope, table_uuid, column_name, field_id)
				VALUES (?, ?, ?, ?) ON CONFLICT (scope, table_uuid, column_name) DO NOTHING`, b.Scope, b.Table, b.Name, b.FieldID)
			if err != nil {
				return err
			}
			added += n
		}
		if added == 0 {
			return nil
		}
		return bumpAuthz(ctx, c)
	})
}

// deleteOrphanBindings removes the bindings of grants that no longer exist.
func deleteOrphanBindings(ctx context.Context, c conn) error {
	_, err := c.exec(ctx, `DELETE FROM authz_column_bindings WHERE scope <> ?
		AND NOT EXISTS (SELECT 1 FROM authz_grants g WHERE g.id = authz_column_bindings.scope)`, authz.TagScope)
	return err
}

func scanGrant(scan func(...any) error) (authz.Grant, error) {
	var g authz.Grant
	var granteeKind, priv, kind, nsKey, filter string
	var at dbTime
	if err := scan(&g.ID, &granteeKind, &g.Grantee.Name, &priv, &kind, &g.On.Warehouse, &nsKey, &g.On.Name,
		&g.TagExpr, &g.AllTables, &filter, &at, &g.CreatedBy); err != nil {
		return g, err
	}
	var err error
	if g.Grantee.Kind, err = authz.ParseGranteeKind(granteeKind); err != nil {
		return g, err
	}
	if g.Privilege, err = authz.ParsePrivilege(priv); err != nil {
		return g, err
	}
	if g.On.Kind, err = authz.ParseKind(kind); err != nil {
		return g, err
	}
	if g.Filter, err = authz.ParseFilterJSON(filter); err != nil {
		return g, err
	}
	g.On.Namespace = catalog.ParseNamespaceKey(nsKey)
	g.CreatedAt = at.t
	return g, nil
}

// each runs query and calls fn with the scanner of each row.
func each(ctx context.Context, c conn, query string, fn func(scan func(...any) error) error, args ...any) error {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// CreateRole adds a role: Invalid if its name is empty, AlreadyExists
// (entity "role") if it is taken. A zero CreatedAt is set to now.
func (s *Store) CreateRole(ctx context.Context, r authz.RoleInfo) error {
	if r.Name == "" {
		return floe.E(floe.Invalid, "role", "role name must not be empty")
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	return s.write(ctx, "create role", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		n, err := c.exec(ctx, "INSERT INTO authz_roles (name, description, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
			r.Name, r.Description, s.d.timeArg(r.CreatedAt))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "role", "Role already exists: %s", r.Name)
		}
		return nil
	})
}

// DropRole removes a role, its memberships and the grants to it: NotFound
// (entity "role").
func (s *Store) DropRole(ctx context.Context, name string) error {
	return s.write(ctx, "drop role", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		if err := s.revokeRoleMembers(ctx, c, name, ""); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM authz_role_members WHERE role = ?", name); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM authz_grants WHERE grantee_kind = 'role' AND grantee = ?", name); err != nil {
			return err
		}
		n, err := c.exec(ctx, "DELETE FROM authz_roles WHERE name = ?", name)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "role", "Role does not exist: %s", name)
		}
		return deleteOrphanBindings(ctx, c)
	})
}

func roleExists(ctx context.Context, c conn, role string) error {
	ok, err := c.exists(ctx, "SELECT 1 FROM authz_roles WHERE name = ?"+c.d.forShare, role)
	if err != nil {
		return err
	}
	if !ok {
		return floe.E(floe.NotFound, "role", "Role does not exist: %s", role)
	}
	return nil
}

// AddRoleMember makes principal a member of role: NotFound (entity "role"),
// AlreadyExists (entity "role member").
func (s *Store) AddRoleMember(ctx context.Context, role, principal string) error {
	if role == "" || principal == "" {
		return floe.E(floe.Invalid, "role member", "role and principal must not be empty")
	}
	return s.write(ctx, "add role member", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		if err := roleExists(ctx, c, role); err != nil {
			return err
		}
		n, err := c.exec(ctx, "INSERT INTO authz_role_members (role, principal) VALUES (?, ?) ON CONFLICT (role, principal) DO NOTHING",
			role, principal)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "role member", "Principal %s is already a member of role %s", principal, role)
		}
		return nil
	})
}

// RemoveRoleMember removes principal from role: NotFound (entity "role member").
func (s *Store) RemoveRoleMember(ctx context.Context, role, principal string) error {
	return s.write(ctx, "remove role member", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		if err := s.revokeRoleMembers(ctx, c, role, principal); err != nil {
			return err
		}
		n, err := c.exec(ctx, "DELETE FROM authz_role_members WHERE role = ? AND principal = ?", role, principal)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "role member", "Principal %s is not a member of role %s", principal, role)
		}
		return nil
	})
}

// PutGrant stores g as is (authz.Authorizer.Grant validates and normalizes
// it): Invalid if its ID is empty, NotFound (entity "role") if it is given to
// a role that does not exist, AlreadyExists (entity "grant") if its ID is
// taken. A zero CreatedAt is set to now.
func (s *Store) PutGrant(ctx context.Context, g authz.Grant) error {
	if g.ID == "" {
		return floe.E(floe.Invalid, "grant", "grant id must not be empty")
	}
	return s.write(ctx, "put grant", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		n, err := s.insertGrant(ctx, c, g)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "grant", "Grant already exists: %s", g.Describe())
		}
		return nil
	})
}

// PutGrants stores grants in one transaction, skipping those whose ID
// exists: Invalid if an ID is empty, NotFound (entity "role") if one is
// given to a role that does not exist.
func (s *Store) PutGrants(ctx context.Context, gs []authz.Grant) error {
	for _, g := range gs {
		if g.ID == "" {
			return floe.E(floe.Invalid, "grant", "grant id must not be empty")
		}
	}
	return s.write(ctx, "put grants", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		for _, g := range gs {
			if _, err := s.insertGrant(ctx, c, g); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertGrant inserts g unless its ID exists and returns the rows inserted.
func (s *Store) insertGrant(ctx context.Context, c conn, g authz.Grant) (int64, error) {
	if g.CreatedAt.IsZero() {
		g.CreatedAt = s.now()
	}
	if g.Grantee.Kind == authz.GranteeRole {
		if err := roleExists(ctx, c, g.Grantee.Name); err != nil {
			return 0, err
		}
	}
	return c.exec(ctx, `INSERT INTO authz_grants (id, grantee_kind, grantee, privilege, securable_kind, warehouse,
		namespace, name, tag_expr, all_tables, filter, created_at, created_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		g.ID, g.Grantee.Kind.String(), g.Grantee.Name, g.Privilege.String(), g.On.Kind.String(), g.On.Warehouse,
		g.On.Namespace.Key(), g.On.Name, g.TagExpr, g.AllTables, g.FilterJSON(), s.d.timeArg(g.CreatedAt), g.CreatedBy)
}

// DeleteGrant removes the grant with that ID: NotFound (entity "grant").
func (s *Store) DeleteGrant(ctx context.Context, id string) error {
	return s.write(ctx, "delete grant", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		if err := s.revokeGrantees(ctx, c, "authz_grants.id = ?", id); err != nil {
			return err
		}
		n, err := c.exec(ctx, "DELETE FROM authz_grants WHERE id = ?", id)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "grant", "Grant does not exist: %s", id)
		}
		_, err = c.exec(ctx, "DELETE FROM authz_column_bindings WHERE scope = ?", id)
		return err
	})
}

// DeleteGrantsOn removes the grants naming sec (not tag-based grants) and
// the tags on sec and its columns, and returns how many grants it removed.
func (s *Store) DeleteGrantsOn(ctx context.Context, sec authz.Securable) (int, error) {
	var removed int64
	err := s.write(ctx, "delete grants on", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		// No revocation of the grantees: this follows a drop, and the
		// dropped table's own revocation (DeleteEntity) refuses its
		// credentials; views and (empty) namespaces have none.
		args := []any{sec.Warehouse, sec.Kind.String(), sec.Namespace.Key(), sec.Name}
		var err error
		removed, err = c.exec(ctx, `DELETE FROM authz_grants WHERE warehouse = ? AND securable_kind = ? AND namespace = ?
			AND name = ? AND tag_expr = ''`, args...)
		if err != nil {
			return err
		}
		_, err = c.exec(ctx, "DELETE FROM authz_tags WHERE warehouse = ? AND securable_kind = ? AND namespace = ? AND name = ?", args...)
		if err != nil {
			return err
		}
		return deleteOrphanBindings(ctx, c)
	})
	return int(removed), err
}

// MoveGrantsOn re-points the grants naming from (not tag-based grants) to
// to, recomputing their IDs (a grant equal to one on to already is merged
// with it), and moves the tags on from and its columns to to, replacing
// tags of to with the same key. It returns how many grants it moved.
func (s *Store) MoveGrantsOn(ctx context.Context, from, to authz.Securable) (int, error) {
	var moved int
	err := s.write(ctx, "move grants on", func(c conn) error {
		moved = 0
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		// No revocation of the grantees: the rename's own revocation of
		// the old name (RenameEntity) refuses the credentials vended for it.
		args := []any{from.Warehouse, from.Kind.String(), from.Namespace.Key(), from.Name}
		var gs []authz.Grant
		err := each(ctx, c, `SELECT `+grantColumns+` FROM authz_grants WHERE warehouse = ? AND securable_kind = ?
			AND namespace = ? AND name = ? AND tag_expr = ''`, func(scan func(...any) error) error {
			g, err := scanGrant(scan)
			gs = append(gs, g)
			return err
		}, args...)
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `DELETE FROM authz_grants WHERE warehouse = ? AND securable_kind = ? AND namespace = ?
			AND name = ? AND tag_expr = ''`, args...); err != nil {
			return err
		}
		for _, g := range gs {
			g.On = to
			g.ID = g.Key()
			if _, err := s.insertGrant(ctx, c, g); err != nil {
				return err
			}
			moved++
		}
		dst := []any{to.Warehouse, to.Kind.String(), to.Namespace.Key(), to.Name}
		if _, err := c.exec(ctx, `DELETE FROM authz_tags WHERE warehouse = ? AND securable_kind = ? AND namespace = ? AND name = ?
			AND (column_name, tag_key) IN (SELECT column_name, tag_key FROM authz_tags
				WHERE warehouse = ? AND securable_kind = ? AND namespace = ? AND name = ?)`, append(dst, args...)...); err != nil {
			return err
		}
		_, err = c.exec(ctx, `UPDATE authz_tags SET warehouse = ?, securable_kind = ?, namespace = ?, name = ?
			WHERE warehouse = ? AND securable_kind = ? AND namespace = ? AND name = ?`, append(dst, args...)...)
		return err
	})
	return moved, err
}

// SetTags sets (adds or replaces) the given keys of t's own tags.
func (s *Store) SetTags(ctx context.Context, t authz.TagTarget, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	return s.write(ctx, "set tags", func(c conn) error {
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		// A changed tag can take a tag-based grant away from a table.
		if err := s.revokeGrantees(ctx, c, "authz_grants.warehouse = ? AND authz_grants.tag_expr <> ''", t.On.Warehouse); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			if k == "" {
				return floe.E(floe.Invalid, "tag", "tag key must not be empty")
			}
			_, err := c.exec(ctx, `INSERT INTO authz_tags (warehouse, securable_kind, namespace, name, column_name, tag_key, tag_value)
				VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (warehouse, securable_kind, namespace, name, column_name, tag_key) DO UPDATE SET tag_value = excluded.tag_value`,
				t.On.Warehouse, t.On.Kind.String(), t.On.Namespace.Key(), t.On.Name, t.Column, k, tags[k])
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteTags removes the given keys of t's own tags and returns how many
// existed.
func (s *Store) DeleteTags(ctx context.Context, t authz.TagTarget, keys []string) (int, error) {
	var removed int64
	err := s.write(ctx, "delete tags", func(c conn) error {
		removed = 0
		if err := bumpAuthz(ctx, c); err != nil {
			return err
		}
		if err := s.revokeGrantees(ctx, c, "authz_grants.warehouse = ? AND authz_grants.tag_expr <> ''", t.On.Warehouse); err != nil {
			return err
		}
		for _, k := range keys {
			n, err := c.exec(ctx, `DELETE FROM authz_tags WHERE warehouse = ? AND securable_kind = ? AND namespace = ?
				AND name = ? AND column_name = ? AND tag_key = ?`,
				t.On.Warehouse, t.On.Kind.String(), t.On.Namespace.Key(), t.On.Name, t.Column, k)
			if err != nil {
				return err
			}
			removed += n
		}
		return nil
	})
	return int(removed), err
}
