-- OAuth token service (issue 4): client public keys for JWT assertions,
-- single-use assertion ids, revoked access tokens, and the hash-chained
-- audit log.

-- Public keys a principal signs JWT client assertions with. kid is the
-- RFC 7638 SHA-256 thumbprint of the key; alg is pinned per key (RS256 for
-- RSA, ES256 for P-256).
CREATE TABLE client_keys (
    principal_id TEXT COLLATE "C" NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    kid          TEXT COLLATE "C" NOT NULL,
    alg          TEXT NOT NULL,
    public_pem   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (principal_id, kid)
);

-- Assertion ids (jti) already used, kept until the assertion expires.
CREATE TABLE used_jtis (
    key        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX used_jtis_by_expiry ON used_jtis (expires_at);

-- Revoked access tokens by jti, kept until the token would have expired.
CREATE TABLE revoked_tokens (
    jti        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);

-- Append-only audit log: hash = sha256(prev_hash || canonical event).
CREATE TABLE audit_events (
    seq         BIGINT NOT NULL PRIMARY KEY,
    time        TIMESTAMPTZ NOT NULL,
    request_id  TEXT NOT NULL,
    principal   TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    action      TEXT NOT NULL,
    resource    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    detail      TEXT NOT NULL, -- canonical JSON object, hashed byte for byte (not JSONB, which reorders)
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);

-- The last event's seq and hash, updated with every append: appends
-- serialize on this row's lock, and deleting the newest events is detectable.
CREATE TABLE audit_head (
    id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);

INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');
