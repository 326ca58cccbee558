-- Revocations (issue 15): what makes vended credentials and open SQL
-- sessions stop working. Each node polls revocation_version (one
-- primary-key read) at most a few times a second and loads the rows
-- whose version is newer than what it has.
--
-- kind is 'token' (subject: an access token's jti), 'disabled' (subject: a
-- principal's name, disabled), 'grant' (subject: a principal's name that
-- lost a grant or a role) or 'table' (subject: a table's "ns.name",
-- dropped or renamed). version is the revocation_version of the
-- transaction that wrote the row; a credential minted under an older
-- version is refused. Rows are kept until every credential they can
-- refuse has expired (expires_at).
CREATE TABLE revocation_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO revocation_version (id, version) VALUES (1, 0);

CREATE TABLE revocations (
    kind       TEXT NOT NULL,
    subject    TEXT NOT NULL,
    version    INTEGER NOT NULL,
    expires_at TEXT NOT NULL,
    -- exempt: for a table, the id of the principal whose drop it was, when
    -- that principal could read the whole table: its own credentials keep
    -- working (to purge the files, as Spark's DROP TABLE ... PURGE does).
    exempt     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kind, subject)
) WITHOUT ROWID;

CREATE INDEX revocations_by_version ON revocations (version);
CREATE INDEX revocations_by_expiry ON revocations (expires_at);
