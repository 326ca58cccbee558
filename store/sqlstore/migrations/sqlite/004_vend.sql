-- Sealing keys of the embedded credential minter (package vend), shared by
-- every node: vended S3 credentials are sealed under them and verified
-- statelessly, so no credential is stored. secret is the 32-byte key.
-- Times are TEXT as in 001.
CREATE TABLE vend_keys (
    id         TEXT NOT NULL PRIMARY KEY,
    secret     BLOB NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX vend_keys_by_age ON vend_keys (created_at);
