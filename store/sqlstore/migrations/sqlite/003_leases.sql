-- Background maintenance across several nodes (issues 6 and 8): leases that
-- let exactly one node run a job, and the record of every maintenance run.
-- Times are TEXT as in 001.

-- A lease is held by holder until expires_at. token is the fencing token: it
-- grows by one on every acquisition and rows are never deleted (a released
-- lease keeps its row with holder '' and an expiry in the past), so a token
-- is never handed out twice for the same name.
CREATE TABLE leases (
    name        TEXT NOT NULL PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       INTEGER NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
) WITHOUT ROWID;

-- One row per run of a maintenance job on a table. tick is the schedule tick
-- (floor(unix time / interval)) the run belongs to; token is the fencing token
-- of the lease the run held. finished is set only when the run completed while
-- still holding its lease (outcome ok or failed); a run whose node died stays
-- 'running' with no finished time, and one whose lease was taken over is 'lost'.
CREATE TABLE maintenance_runs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    warehouse  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    table_name TEXT NOT NULL,
    job        TEXT NOT NULL,
    tick       INTEGER NOT NULL,
    node       TEXT NOT NULL,
    token      INTEGER NOT NULL,
    started    TEXT NOT NULL,
    finished   TEXT,
    outcome    TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT ''
);

-- At most one finished run per table, job and tick.
CREATE UNIQUE INDEX maintenance_runs_once
    ON maintenance_runs (warehouse, namespace, table_name, job, tick) WHERE finished IS NOT NULL;
-- A table's history, newest first.
CREATE INDEX maintenance_runs_by_table ON maintenance_runs (warehouse, namespace, table_name, job, started);
-- Pruning by age.
CREATE INDEX maintenance_runs_by_age ON maintenance_runs (started);
