-- Purge jobs (issue 16): a drop with purge records here, in the drop's own
-- transaction, the dropped table's location and last metadata file, so
-- that its files are deleted even if the node dies mid-purge. done counts
-- the metadata files (metadata log oldest first, then the last one) whose
-- files are all deleted. A run holds a job as a lease: holder until
-- expires_at, token its fencing token (incremented on every acquisition).
-- While a job exists no table may be created, registered or moved at,
-- inside or above its location.
CREATE TABLE purge_jobs (
    warehouse         TEXT COLLATE "C" NOT NULL,
    location          TEXT COLLATE "C" NOT NULL,
    namespace         TEXT NOT NULL,
    name              TEXT NOT NULL,
    metadata_location TEXT NOT NULL,
    done              INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    holder            TEXT NOT NULL DEFAULT '',
    token             BIGINT NOT NULL DEFAULT 0,
    expires_at        TIMESTAMPTZ NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (warehouse, location)
);
CREATE INDEX purge_jobs_by_age ON purge_jobs (created_at);
