-- Background maintenance across several nodes (issues 6 and 8): leases that
-- let exactly one node run a job, and the record of every maintenance run.

-- A lease is held by holder until expires_at. token is the fencing token: it
-- grows by one on every acquisition and rows are never deleted (a released
-- lease keeps its row with holder '' and an expiry in the past), so a token
-- is never handed out twice for the same name.
CREATE TABLE leases (
    name        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);

-- One row per run of a maintenance job on a table. tick is the schedule tick
-- (floor(unix time / interval)) the run belongs to; token is the fencing token
-- of the lease the run held. finished is set only when the run completed while
-- still holding its lease (outcome ok or failed); a run whose node died stays
-- 'running' with no finished time, and one whose lease was taken over is 'lost'.
CREATE TABLE maintenance_runs (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    warehouse  TEXT COLLATE "C" NOT NULL,
    namespace  TEXT COLLATE "C" NOT NULL,
    table_name TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C" NOT NULL,
    tick       BIGINT NOT NULL,
    node       TEXT NOT NULL,
    token      BIGINT NOT NULL,
    started    TIMESTAMPTZ NOT NULL,
    finished   TIMESTAMPTZ,
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
