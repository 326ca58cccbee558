-- Tombstones (issue 14): the location of a table dropped without deleting
-- its files stays claimed, so that nobody but the table's previous owner
-- (owner, a principal id; '' for none) or an administrator can create,
-- register or move a table over those files. namespace and name are the
-- dropped table's identifier, for messages and listings.
CREATE TABLE tombstones (
    warehouse  TEXT NOT NULL,
    location   TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    owner      TEXT NOT NULL,
    dropped_at TEXT NOT NULL,
    PRIMARY KEY (warehouse, location)
);
