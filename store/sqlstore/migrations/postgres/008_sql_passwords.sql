-- SCRAM-SHA-256 verifiers of principals that log in to the SQL endpoint
-- with a password (the others present an OAuth access token).
CREATE TABLE principal_passwords (
    principal_id TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES principals (id) ON DELETE CASCADE,
    verifier     TEXT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
