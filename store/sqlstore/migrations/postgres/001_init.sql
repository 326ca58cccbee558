-- Floe metadata store, initial schema (PostgreSQL).
-- Every text key uses the "C" collation so that ORDER BY and the keyset
-- comparisons of pagination are bytewise, as on SQLite, whatever the
-- database's default collation.

CREATE TABLE warehouses (
    name     TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    location TEXT NOT NULL
);

-- name is the namespace key: its levels joined by U+001F. parent is the key of
-- the parent namespace, '' for a top-level namespace.
CREATE TABLE namespaces (
    warehouse  TEXT COLLATE "C" NOT NULL REFERENCES warehouses (name),
    name       TEXT COLLATE "C" NOT NULL,
    parent     TEXT COLLATE "C" NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (warehouse, name)
);

-- Keyset pagination of the children of one namespace.
CREATE INDEX namespaces_by_parent ON namespaces (warehouse, parent, name);

-- Tables and views share one identifier space: the key has no kind.
CREATE TABLE entities (
    warehouse         TEXT COLLATE "C" NOT NULL,
    namespace         TEXT COLLATE "C" NOT NULL,
    name              TEXT COLLATE "C" NOT NULL,
    kind              TEXT COLLATE "C" NOT NULL CHECK (kind IN ('table', 'view')),
    metadata_location TEXT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (warehouse, namespace, name),
    FOREIGN KEY (warehouse, namespace) REFERENCES namespaces (warehouse, name)
);

-- Keyset pagination of the tables (or views) of one namespace.
CREATE INDEX entities_by_kind ON entities (warehouse, namespace, kind, name);

CREATE TABLE principals (
    id          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    client_id   TEXT COLLATE "C" NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    scopes      TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    admin       BOOLEAN NOT NULL DEFAULT FALSE,
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE signing_keys (
    kid         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    private_pem BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE INDEX signing_keys_by_age ON signing_keys (created_at);

CREATE TABLE idempotency (
    key        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    status     INTEGER NOT NULL,
    header     TEXT NOT NULL,
    body       BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- Lazy expiry deletes by age.
CREATE INDEX idempotency_by_age ON idempotency (created_at);
