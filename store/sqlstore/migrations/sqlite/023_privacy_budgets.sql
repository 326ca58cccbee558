-- Privacy budgets of clean rooms (issue 22, package cleanroom): one row a
-- collaboration with differential privacy. Amounts of epsilon are counted
-- in millionths (integers, so that charges add up exactly); times are
-- Unix nanoseconds. A query's charge is one conditional UPDATE (spent +
-- charge <= budget, a new period restoring it), so that concurrent
-- queries cannot overspend.

CREATE TABLE cleanroom_budgets (
    collaboration TEXT NOT NULL PRIMARY KEY,
    budget        INTEGER NOT NULL,
    period        INTEGER NOT NULL,
    spent         INTEGER NOT NULL,
    period_start  INTEGER NOT NULL
);
