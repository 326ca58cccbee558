-- Clean rooms (issue 22, package cleanroom). A collaboration is one row
-- whose spec is its definition as JSON (cleanroom.Collaboration: members,
-- configured tables with their analysis rules, result receivers); version
-- counts its changes, each replacing the previous one (compare-and-swap).
-- Its query log, readable by every member, is cleanroom_queries: one row a
-- query (record as JSON, cleanroom.QueryRecord), a bounded number kept.

CREATE TABLE cleanrooms (
    name       TEXT NOT NULL PRIMARY KEY,
    version    INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE cleanroom_queries (
    id            TEXT NOT NULL PRIMARY KEY,
    collaboration TEXT NOT NULL,
    at            TEXT NOT NULL,
    record        TEXT NOT NULL
);

CREATE INDEX cleanroom_queries_by_collaboration ON cleanroom_queries (collaboration, at);
