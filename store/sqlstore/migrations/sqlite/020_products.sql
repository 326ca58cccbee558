-- Data products (issue 20, package products). Every published version of a
-- product is a row of product_versions; the current version is the highest.
-- spec is the version's definition as JSON (products.Product). Check runs
-- of the expectations are rows of product_checks, run being the whole run
-- as JSON (products.CheckRun); the store keeps a bounded number of each.

CREATE TABLE product_versions (
    warehouse  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (warehouse, name, version)
);

CREATE TABLE product_checks (
    id        TEXT NOT NULL PRIMARY KEY,
    warehouse TEXT NOT NULL,
    name      TEXT NOT NULL,
    version   INTEGER NOT NULL,
    at        TEXT NOT NULL,
    status    TEXT NOT NULL,
    run       TEXT NOT NULL
);

CREATE INDEX product_checks_by_product ON product_checks (warehouse, name, at);
