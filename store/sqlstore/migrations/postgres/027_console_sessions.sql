-- Web console sessions (issue 24, package console), shared by every node
-- on the store so that a browser may reach any of them: one row a session,
-- keyed by the SHA-256 of its cookie value (hex). The session's Floe token
-- is kept only sealed (AES-256-GCM under a key derived from the cookie
-- value, which the store never sees); token_id, client_id, principal_id and
-- expires_at name it for revocation when the session is evicted. At most
-- console_max_sessions rows are kept: a new session evicts expired ones,
-- then the one expiring first. (027: 026 is left to another change.)

CREATE TABLE console_sessions (
    id_hash      TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    principal    TEXT NOT NULL,
    sealed_token TEXT NOT NULL,
    token_id     TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- One row that a new session's transaction updates first, so that
-- concurrent sign-ins on several nodes count the sessions one at a time.
CREATE TABLE console_session_lock (
    id INTEGER NOT NULL PRIMARY KEY
);
INSERT INTO console_session_lock (id) VALUES (1);
