-- Functions (issue 21, the REST spec's listFunctions/loadFunction): one
-- row a UDF, the pointer to its current metadata file (the Iceberg UDF
-- spec's self-contained metadata, written under the namespace's location),
-- replaced by compare-and-swap like a view's. Functions have their own
-- identifier space: a function may share a name with a table or view.

CREATE TABLE functions (
    warehouse         TEXT COLLATE "C" NOT NULL,
    namespace         TEXT COLLATE "C" NOT NULL,
    name              TEXT COLLATE "C" NOT NULL,
    metadata_location TEXT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (warehouse, namespace, name),
    FOREIGN KEY (warehouse, namespace) REFERENCES namespaces (warehouse, name)
);
