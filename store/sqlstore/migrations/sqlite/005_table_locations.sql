-- The base location of each table, so that no table can be created or
-- registered at, above or below another table's location (vended storage
-- credentials are scoped to a table's location prefix). NULL for tables
-- created before this migration until their next commit.
ALTER TABLE entities ADD COLUMN location TEXT;
CREATE INDEX entities_by_location ON entities (warehouse, location);
