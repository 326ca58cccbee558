-- Client secret rotation and revoking all of a principal's tokens (issue
-- 24). old_secret_hash is the hash of the previous client secret, accepted
-- until old_secret_expires_at (a rotation with a grace period; '' and NULL
-- when there is none: at most one old secret is kept). tokens_not_before
-- refuses every access token issued (iat) before it; NULL refuses none.

ALTER TABLE principals ADD COLUMN old_secret_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE principals ADD COLUMN old_secret_expires_at TIMESTAMPTZ;
ALTER TABLE principals ADD COLUMN tokens_not_before TIMESTAMPTZ;
