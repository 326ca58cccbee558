-- Authorization (issue 5, package authz): roles, role memberships, grants,
-- tags and the version counter every node reads before each decision.
-- Securables are referenced by name: warehouse, namespace key (levels joined
-- by U+001F, '' for a warehouse) and name ('' for a warehouse or namespace).

-- A single row; every authorization mutation increments version in its
-- transaction (which also serializes authorization mutations).
CREATE TABLE authz_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO authz_version (id, version) VALUES (1, 0);

CREATE TABLE authz_roles (
    name        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL
);

-- Principals (by name) in roles. Roles do not nest.
CREATE TABLE authz_role_members (
    role      TEXT COLLATE "C" NOT NULL REFERENCES authz_roles (name) ON DELETE CASCADE,
    principal TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (role, principal)
);

-- One privilege per row. id is derived from the grant's content (authz
-- Grant.Key), so a grant is stored once. A tag-based grant has tag_expr set
-- (canonical form) and names its warehouse; filter is the JSON data filter
-- of a SELECT grant, '' for none.
CREATE TABLE authz_grants (
    id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    grantee_kind   TEXT NOT NULL,
    grantee        TEXT COLLATE "C" NOT NULL,
    privilege      TEXT NOT NULL,
    securable_kind TEXT NOT NULL,
    warehouse      TEXT COLLATE "C" NOT NULL,
    namespace      TEXT COLLATE "C" NOT NULL,
    name           TEXT COLLATE "C" NOT NULL,
    tag_expr       TEXT NOT NULL,
    all_tables     BOOLEAN NOT NULL,
    filter         TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    created_by     TEXT NOT NULL
);

CREATE INDEX authz_grants_by_grantee ON authz_grants (grantee_kind, grantee);
CREATE INDEX authz_grants_by_securable ON authz_grants (warehouse, securable_kind, namespace, name);

-- Tags on securables (column_name '') and on columns of tables and views.
CREATE TABLE authz_tags (
    warehouse      TEXT COLLATE "C" NOT NULL,
    securable_kind TEXT NOT NULL,
    namespace      TEXT COLLATE "C" NOT NULL,
    name           TEXT COLLATE "C" NOT NULL,
    column_name    TEXT COLLATE "C" NOT NULL,
    tag_key        TEXT COLLATE "C" NOT NULL,
    tag_value      TEXT NOT NULL,
    PRIMARY KEY (warehouse, securable_kind, namespace, name, column_name, tag_key)
);
