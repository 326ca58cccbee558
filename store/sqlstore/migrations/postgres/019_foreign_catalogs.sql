-- Federation (issue 19): foreign catalogs created at run time through the
-- management API (package federation). Configured catalogs are not stored.
-- name_key is the lower-cased name: names are unique without regard to
-- case. secret is the operator-passed bearer token or OAuth2 client secret,
-- sealed with the store's secret sealer (internal/keywrap, purpose
-- federation.SealPurpose, id = id); empty when there is none or when
-- secret_env names the environment variable holding it on every node.
-- cache_ttl_ms is the metadata cache TTL in milliseconds (negative: none).

CREATE TABLE foreign_catalogs (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name         TEXT NOT NULL,
    name_key     TEXT COLLATE "C" NOT NULL UNIQUE,
    type         TEXT NOT NULL,
    uri          TEXT NOT NULL,
    warehouse    TEXT NOT NULL DEFAULT '',
    auth         TEXT NOT NULL,
    client_id    TEXT NOT NULL DEFAULT '',
    scope        TEXT NOT NULL DEFAULT '',
    token_url    TEXT NOT NULL DEFAULT '',
    cache_ttl_ms BIGINT  NOT NULL,
    secret_env   TEXT NOT NULL DEFAULT '',
    secret       BYTEA NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
