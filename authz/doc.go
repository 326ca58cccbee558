// Package authz decides what an authenticated principal may do: privileges
// granted to principals and roles on warehouses, namespaces, tables and
// views, tag-based grants in the manner of Lake Formation LF-Tags, and data
// filters on SELECT grants. It is the domain side only: it serves no HTTP and
// persists through the Store interface (implemented by store/sqlstore).
//
// # Privileges
//
//   - DESCRIBE: list and load metadata (namespaces, tables, views); no data.
//   - SELECT: read data (read-only vended credentials, SQL reads).
//   - MODIFY: commit to a table and write its data; replace a view.
//   - ALTER: change a namespace's properties.
//   - CREATE_NAMESPACE, CREATE_TABLE, CREATE_VIEW: create inside a warehouse
//     or namespace; checked on the container (the parent namespace, or the
//     warehouse for a top-level namespace).
//   - DROP: drop the securable.
//   - MANAGE_GRANTS: grant and revoke privileges on the securable and set its
//     tags (CheckGrantAdmin, CheckTagAdmin).
//   - CREATE_SHARE: create shares of the warehouse's objects, and recipients
//     (package sharing); granted on a warehouse only. The creator owns the
//     share; adding an object to it needs the right to grant SELECT on the
//     object (MANAGE_GRANTS on it), granting it needs ownership.
//
// Holding any privilege on a securable implies DESCRIBE on that securable
// (one can see what one can act on), and nothing else: SELECT does not imply
// MODIFY nor the reverse, and privileges on a table do not make its
// namespace listable (grant DESCRIBE on the namespace for that).
//
// # Scope of a grant
//
// Grants are per named resource. A grant on a namespace covers that
// namespace and its descendant namespaces for namespace-level actions:
// DESCRIBE (see and list it: its child namespaces, tables and views),
// CREATE_*, DROP of the namespace, MANAGE_GRANTS. It covers the tables and
// views inside (at any depth, including ones created later) only when it is
// an explicit AllTables grant; SELECT and MODIFY may therefore be granted on
// a namespace or warehouse only with AllTables, as SELECT on namespace crm
// without it would give no data. A warehouse grant is the same rule one level
// up. Privileges that make no sense on a table or view (CREATE_*) cannot be
// granted on one.
//
// The principal that creates a namespace, table or view is granted, on it,
// what an owner needs (Authorizer.GrantOwner): on a table or view SELECT,
// MODIFY, DROP and MANAGE_GRANTS; on a namespace ALTER, CREATE_NAMESPACE,
// CREATE_TABLE, CREATE_VIEW, DROP and MANAGE_GRANTS. These are ordinary
// grants (created_by is the creator) and can be revoked like any other.
// MANAGE_GRANTS on a namespace lets its holder grant AllTables privileges on
// it, so the owner of a namespace governs what is created inside it.
//
// Administrators (auth.Claims.Admin) hold every privilege everywhere,
// without filters; no grant applies to them.
//
// Principals are named by name (auth.Principal.Name), as are roles. Roles
// hold principals and do not nest. Membership of a principal that does not
// exist is allowed and grants nothing until it does.
//
// # Tags
//
// Tags are key=value pairs on warehouses, namespaces, tables, views and
// columns of tables and views. Effective tags are inherited down the tree
// (warehouse, namespace, child namespace, table or view, column) and a lower
// level overrides a key set above. Keys and values are case-sensitive.
//
// A tag-based grant names a warehouse and a tag expression (see Expr, e.g.
// `domain = sales AND sensitivity IN (low, medium)`) instead of a securable;
// it applies to every namespace, table and view of that warehouse whose
// effective tags match, evaluated at decision time, so it covers objects
// created or tagged after the grant. For a table or view whose own effective
// tags do not match but some of whose columns' effective tags do, a
// tag-based SELECT (or DESCRIBE) covers those columns only, and one whose
// table tags match but some columns' tags do not excludes those columns: this
// is a column restriction, so the read counts as filtered (see below).
//
// # Data filters
//
// A SELECT grant may carry a DataFilter: a row filter (an SQL boolean
// expression, checked here only for length and characters; the SQL endpoint
// parses and enforces it) and a column inclusion or exclusion list. When a
// principal holds SELECT on a table through any grant without a filter, it
// may read whole files; otherwise Policy.ReadFilters returns the filters of
// the grants that give it SELECT (a row is visible if any filter admits it)
// and Policy.CheckFileAccess refuses direct file access (vended storage
// credentials), pointing to the SQL endpoint.
//
// The column names of a filter, and the column a column tag is set on, are
// bound per table to Iceberg field ids (ColumnBinding): when the grant or
// tag on one table is made (Authorizer.Grant, SetTags), before any commit
// changes a table's schema (Authorizer.BindTable, for every filter and tag
// that may apply to it), and otherwise at the first read
// (Policy.BindFilters). A binding is stored once and never replaced, so
// renames, drops, re-adds and removed schemas cannot move a filter or tag
// onto another column; the SQL endpoint applies BoundFilters by field id.
//
// # Decisions and freshness
//
// A Policy is an immutable, indexed snapshot of all grants, roles,
// memberships and tags at one store version; Check, Effective and
// ReadFilters answer in microseconds without I/O. Denials are floe.Forbidden
// errors (entity "privilege") that say exactly what is missing and what the
// principal holds, e.g.
//
//	principal "glue-federation" lacks DESCRIBE on namespace "crm"
//	principal "bi" lacks SELECT on table "crm.accounts" (it has DESCRIBE)
//
// The Authorizer holds the current Policy; Authorizer.Policy reads the
// store's version counter (one indexed read) and reloads only when it
// changed. Every mutation increments the counter in its transaction, so a
// revoke on any node is seen by every node on its next request.
//
// # Renames and drops
//
// Grants and tags refer to securables by name (warehouse, namespace key,
// name). When a securable is dropped, the catalog calls
// Authorizer.DeleteGrantsOn to remove the grants naming it and its tags, so
// that a new object of the same name does not inherit them. A rename is, for
// authorization, a drop and a create: named grants and tags do not follow
// the object; AllTables and tag-based grants cover it under its new name as
// they would any object there.
package authz
