-- Federation (issue 19): SigV4 foreign catalogs created at run time, and
-- writes forwarded to the remote. region, signing_name, role_arn and
-- external_id configure auth sigv4 (no secret is stored for it: each node
-- uses its AWS default chain). writes turns on forwarding writes with the
-- write identity: write_client_id (oauth2), write_role_arn and
-- write_external_id (sigv4), and the write secret (the write identity's
-- bearer token or client secret), sealed in write_secret (purpose
-- federation.WriteSealPurpose, id = id) or named by write_secret_env.

ALTER TABLE foreign_catalogs ADD COLUMN region TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN signing_name TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN role_arn TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN external_id TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN writes BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE foreign_catalogs ADD COLUMN write_client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN write_role_arn TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN write_external_id TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN write_secret_env TEXT NOT NULL DEFAULT '';
ALTER TABLE foreign_catalogs ADD COLUMN write_secret BYTEA NOT NULL DEFAULT ''::bytea;
