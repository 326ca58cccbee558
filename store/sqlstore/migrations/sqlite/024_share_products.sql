-- Data products in shares (issue 20): a share object of kind 'product'
-- names a data product of the share's warehouse (name; namespace '') and
-- shares its current output ports. SQLite cannot alter a CHECK: the table
-- is rebuilt with the same rows.

CREATE TABLE share_objects_new (
    id               TEXT NOT NULL PRIMARY KEY,
    share_id         TEXT NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('table', 'view', 'namespace', 'product')),
    namespace        TEXT NOT NULL,
    name             TEXT NOT NULL,
    alias_schema     TEXT NOT NULL DEFAULT '',
    alias_name       TEXT NOT NULL DEFAULT '',
    visible_key      TEXT NOT NULL,
    history          INTEGER NOT NULL,
    partition_filter TEXT NOT NULL DEFAULT '',
    added_by         TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    UNIQUE (share_id, kind, namespace, name),
    UNIQUE (share_id, visible_key)
) WITHOUT ROWID;

INSERT INTO share_objects_new SELECT id, share_id, kind, namespace, name, alias_schema, alias_name, visible_key, history,
    partition_filter, added_by, created_at FROM share_objects;
DROP TABLE share_objects;
ALTER TABLE share_objects_new RENAME TO share_objects;
