-- Purge jobs (issue 16): a drop with purge records here, in the drop's own
-- transaction, the dropped table's location and last metadata file, so
-- that its files are deleted even if the node dies mid-purge. done counts
-- the metadata files (metadata log oldest first, then the last one) whose
-- files are all deleted. A run holds a job as a lease: holder until
-- expires_at, token its fencing token (incremented on every acquisition).
-- While a job exists no table may be created, registered or moved at,
-- inside or above its location. Times are TEXT as in 001.
CREATE TABLE purge_jobs (
    warehouse         TEXT NOT NULL,
    location          TEXT NOT NULL,
    namespace         TEXT NOT NULL,
    name              TEXT NOT NULL,
    metadata_location TEXT NOT NULL,
    done              INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    holder            TEXT NOT NULL DEFAULT '',
    token             INTEGER NOT NULL DEFAULT 0,
    expires_at        TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    PRIMARY KEY (warehouse, location)
);
CREATE INDEX purge_jobs_by_age ON purge_jobs (created_at);
