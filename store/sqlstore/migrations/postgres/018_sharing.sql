-- Sharing (issue 18): shares of tables, views and namespaces, recipients
-- with bearer tokens, and grants of shares to recipients (package sharing).
-- name_key is the lower-cased name: names are unique and looked up without
-- regard to case, as Delta Sharing clients treat them.

CREATE TABLE shares (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL,
    name_key   TEXT COLLATE "C" NOT NULL UNIQUE,
    warehouse  TEXT NOT NULL,
    owner      TEXT NOT NULL,
    comment    TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

-- kind is 'table', 'view' or 'namespace'; namespace is the namespace key
-- (levels joined by U+001F), name '' for a namespace. visible_key is the
-- lower-cased "schema/name" the recipient sees ("schema/" for a namespace).
CREATE TABLE share_objects (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    share_id         TEXT COLLATE "C" NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('table', 'view', 'namespace')),
    namespace        TEXT NOT NULL,
    name             TEXT NOT NULL,
    alias_schema     TEXT NOT NULL DEFAULT '',
    alias_name       TEXT NOT NULL DEFAULT '',
    visible_key      TEXT COLLATE "C" NOT NULL,
    history          BOOLEAN NOT NULL,
    partition_filter TEXT NOT NULL DEFAULT '',
    added_by         TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (share_id, kind, namespace, name),
    UNIQUE (share_id, visible_key)
);

-- properties is a JSON object; allowed_cidrs canonical CIDR prefixes
-- separated by commas ('' = any address); expires_at NULL = never.
CREATE TABLE share_recipients (
    id            TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name          TEXT NOT NULL,
    name_key      TEXT COLLATE "C" NOT NULL UNIQUE,
    owner         TEXT NOT NULL,
    comment       TEXT NOT NULL DEFAULT '',
    properties    TEXT NOT NULL DEFAULT '{}',
    allowed_cidrs TEXT NOT NULL DEFAULT '',
    expires_at    TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL
);

-- A recipient's bearer tokens, stored only as the hex SHA-256 of the
-- token. expires_at NULL = never; revoked_at NULL = not revoked.
CREATE TABLE share_recipient_tokens (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    recipient_id TEXT COLLATE "C" NOT NULL REFERENCES share_recipients (id) ON DELETE CASCADE,
    token_hash   TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);

CREATE INDEX share_recipient_tokens_by_recipient ON share_recipient_tokens (recipient_id);

CREATE TABLE share_grants (
    share_id     TEXT COLLATE "C" NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    recipient_id TEXT COLLATE "C" NOT NULL REFERENCES share_recipients (id) ON DELETE CASCADE,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (share_id, recipient_id)
);

CREATE INDEX share_grants_by_recipient ON share_grants (recipient_id, share_id);
