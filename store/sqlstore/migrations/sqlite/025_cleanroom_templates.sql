-- Query templates of clean rooms (issue 22, the custom analysis rule,
-- package cleanroom): one row a template, its definition as JSON
-- (cleanroom.Template: SQL, typed parameters, allowed members,
-- approvals); version counts its changes, each replacing the previous one
-- (compare-and-swap). Dropped with their collaboration. (025: 024 is taken
-- by share products.)

CREATE TABLE cleanroom_templates (
    collaboration TEXT NOT NULL,
    name          TEXT NOT NULL,
    version       INTEGER NOT NULL,
    spec          TEXT NOT NULL,
    PRIMARY KEY (collaboration, name)
);
