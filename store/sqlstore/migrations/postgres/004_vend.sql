-- Sealing keys of the embedded credential minter (package vend), shared by
-- every node: vended S3 credentials are sealed under them and verified
-- statelessly, so no credential is stored. secret is the 32-byte key.
CREATE TABLE vend_keys (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    secret     BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX vend_keys_by_age ON vend_keys (created_at);
