-- Authorization (issue 5, package authz): roles, role memberships, grants,
-- tags and the version counter every node reads before each decision.
-- Securables are referenced by name: warehouse, namespace key (levels joined
-- by U+001F, '' for a warehouse) and name ('' for a warehouse or namespace).
-- Times are TEXT as in 001; booleans are INTEGER 0/1.

-- A single row; every authorization mutation increments version in its
-- transaction.
CREATE TABLE authz_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO authz_version (id, version) VALUES (1, 0);

CREATE TABLE authz_roles (
    name        TEXT NOT NULL PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL
) WITHOUT ROWID;

-- Principals (by name) in roles. Roles do not nest.
CREATE TABLE authz_role_members (
    role      TEXT NOT NULL REFERENCES authz_roles (name) ON DELETE CASCADE,
    principal TEXT NOT NULL,
    PRIMARY KEY (role, principal)
) WITHOUT ROWID;

-- One privilege per row. id is derived from the grant's content (authz
-- Grant.Key), so a grant is stored once. A tag-based grant has tag_expr set
-- (canonical form) and names its warehouse; filter is the JSON data filter
-- of a SELECT grant, '' for none.
CREATE TABLE authz_grants (
    id             TEXT NOT NULL PRIMARY KEY,
    grantee_kind   TEXT NOT NULL,
    grantee        TEXT NOT NULL,
    privilege      TEXT NOT NULL,
    securable_kind TEXT NOT NULL,
    warehouse      TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    tag_expr       TEXT NOT NULL,
    all_tables     INTEGER NOT NULL,
    filter         TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    created_by     TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX authz_grants_by_grantee ON authz_grants (grantee_kind, grantee);
CREATE INDEX authz_grants_by_securable ON authz_grants (warehouse, securable_kind, namespace, name);

-- Tags on securables (column_name '') and on columns of tables and views.
CREATE TABLE authz_tags (
    warehouse      TEXT NOT NULL,
    securable_kind TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    column_name    TEXT NOT NULL,
    tag_key        TEXT NOT NULL,
    tag_value      TEXT NOT NULL,
    PRIMARY KEY (warehouse, securable_kind, namespace, name, column_name, tag_key)
) WITHOUT ROWID;
