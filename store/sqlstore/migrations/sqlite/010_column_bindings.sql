-- Column bindings (issue 14, package authz ColumnBinding): the Iceberg field
-- id a column name of a grant's data filter (scope = the grant id) or of a
-- column tag (scope 'tags') stands for in one table (its table UUID). A
-- binding is made once and never replaced, so renames, drops and re-adds of
-- columns cannot move a filter or tag onto another column. field_id -1: the
-- table had no such column when the binding was made.
CREATE TABLE authz_column_bindings (
    scope       TEXT NOT NULL,
    table_uuid  TEXT NOT NULL,
    column_name TEXT NOT NULL,
    field_id    INTEGER NOT NULL,
    PRIMARY KEY (scope, table_uuid, column_name)
) WITHOUT ROWID;
