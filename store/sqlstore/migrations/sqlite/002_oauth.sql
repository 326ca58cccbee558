-- OAuth token service (issue 4): client public keys for JWT assertions,
-- single-use assertion ids, revoked access tokens, and the hash-chained
-- audit log. Times are TEXT as in 001.

-- Public keys a principal signs JWT client assertions with. kid is the
-- RFC 7638 SHA-256 thumbprint of the key; alg is pinned per key (RS256 for
-- RSA, ES256 for P-256).
CREATE TABLE client_keys (
    principal_id TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    kid          TEXT NOT NULL,
    alg          TEXT NOT NULL,
    public_pem   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (principal_id, kid)
) WITHOUT ROWID;

-- Assertion ids (jti) already used, kept until the assertion expires.
CREATE TABLE used_jtis (
    key        TEXT NOT NULL PRIMARY KEY,
    expires_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX used_jtis_by_expiry ON used_jtis (expires_at);

-- Revoked access tokens by jti, kept until the token would have expired.
CREATE TABLE revoked_tokens (
    jti        TEXT NOT NULL PRIMARY KEY,
    expires_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);

-- Append-only audit log: hash = sha256(prev_hash || canonical event).
CREATE TABLE audit_events (
    seq         INTEGER NOT NULL PRIMARY KEY,
    time        TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    principal   TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    action      TEXT NOT NULL,
    resource    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    detail      TEXT NOT NULL, -- canonical JSON object, hashed byte for byte
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);

-- The last event's seq and hash, updated with every append: appends
-- serialize on this row, and deleting the newest events is detectable.
CREATE TABLE audit_head (
    id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);

INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');
