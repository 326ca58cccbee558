-- Floe metadata store, initial schema (SQLite).
-- Times are TEXT in the fixed-width UTC form 2006-01-02T15:04:05.000000Z so
-- that they sort and compare as strings. Text compares bytewise (BINARY).

CREATE TABLE warehouses (
    name     TEXT NOT NULL PRIMARY KEY,
    location TEXT NOT NULL
) WITHOUT ROWID;

-- name is the namespace key: its levels joined by U+001F. parent is the key of
-- the parent namespace, '' for a top-level namespace.
CREATE TABLE namespaces (
    warehouse  TEXT NOT NULL REFERENCES warehouses (name),
    name       TEXT NOT NULL,
    parent     TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (warehouse, name)
) WITHOUT ROWID;

-- Keyset pagination of the children of one namespace.
CREATE INDEX namespaces_by_parent ON namespaces (warehouse, parent, name);

-- Tables and views share one identifier space: the key has no kind.
CREATE TABLE entities (
    warehouse         TEXT NOT NULL,
    namespace         TEXT NOT NULL,
    name              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('table', 'view')),
    metadata_location TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    PRIMARY KEY (warehouse, namespace, name),
    FOREIGN KEY (warehouse, namespace) REFERENCES namespaces (warehouse, name)
) WITHOUT ROWID;

-- Keyset pagination of the tables (or views) of one namespace.
CREATE INDEX entities_by_kind ON entities (warehouse, namespace, kind, name);

CREATE TABLE principals (
    id          TEXT NOT NULL PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    client_id   TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    scopes      TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    admin       INTEGER NOT NULL DEFAULT 0,
    disabled    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE signing_keys (
    kid         TEXT NOT NULL PRIMARY KEY,
    private_pem BLOB NOT NULL,
    created_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX signing_keys_by_age ON signing_keys (created_at);

CREATE TABLE idempotency (
    key        TEXT NOT NULL PRIMARY KEY,
    status     INTEGER NOT NULL,
    header     TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;

-- Lazy expiry deletes by age.
CREATE INDEX idempotency_by_age ON idempotency (created_at);
