-- Audit retention (issue 14): the newest checkpoint of the audit chain.
-- Pruning deletes the oldest records and, in the same transaction, stores a
-- checkpoint (seq and hash of the last pruned record, count pruned, time)
-- signed with a server key; `floe audit verify` starts from it. body is the
-- exact signed JSON; seq duplicates its seq for the compare-and-swap.
CREATE TABLE audit_checkpoint (
    id        INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seq       BIGINT NOT NULL,
    body      TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL -- base64
);
