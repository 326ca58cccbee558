package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Temporary tables (CREATE TEMPORARY TABLE t AS SELECT ...) live in the
// session's own DuckDB database, never in the catalog: other sessions do
// not see them, and they go when the session ends (its database is
// closed) or at DROP TABLE t. Their rows come through the same checked
// query path as any SELECT (the caller's privileges, row filters and
// masks), so a temporary table holds only what its creator may read; a
// statement may then name it by its one-part name, which the analysis
// leaves to DuckDB. A session holds at most Options.MaxTempTables of
// them, with at most Options.MaxTempRows rows together; their bytes count
// against the session's DuckDB memory limit. They are not transactional:
// ROLLBACK does not drop one created in the block.

// DefaultMaxTempTables is the default of Options.MaxTempTables.
const DefaultMaxTempTables = 64

// DefaultMaxTempRows is the default of Options.MaxTempRows.
const DefaultMaxTempRows = 10_000_000

// reservedTempPrefix starts the names of the engine's own working tables.
const reservedTempPrefix = "__floe_"

func (ss *session) tempLimits() (tables int, rows int64) {
	tables, rows = ss.e.opts.MaxTempTables, int64(ss.e.opts.MaxTempRows)
	if tables <= 0 {
		tables = DefaultMaxTempTables
	}
	if rows <= 0 {
		rows = DefaultMaxTempRows
	}
	return tables, rows
}

// createTemp runs CREATE TEMPORARY TABLE name AS query.
func (ss *session) createTemp(ctx context.Context, d *ddlParsed) (tag string, written, read []string, err error) {
	if len(d.path) != 1 {
		return "", nil, nil, unsupported("a temporary table's name has no schema: CREATE TEMPORARY TABLE name AS ...")
	}
	if d.query == "" || d.orReplace || len(d.colNames) > 0 || len(d.parts) > 0 || len(d.props) > 0 {
		return "", nil, nil, unsupported("temporary tables are created as CREATE TEMPORARY TABLE name AS SELECT ...")
	}
	name := d.path[0]
	key := strings.ToLower(name)
	for _, p := range []string{reservedTempPrefix, "pg_", "duckdb_", "sqlite_"} {
		if strings.HasPrefix(key, p) {
			// The engine's working tables, and names its catalog views
			// could resolve to.
			return "", nil, nil, &pgwire.Error{Code: "42939", Message: fmt.Sprintf("table name %q is reserved: temporary table names may not start with %s", name, p)}
		}
	}
	if _, ok := ss.temps[key]; ok {
		if d.ifExists {
			return "SELECT 0", nil, nil, nil
		}
		return "", nil, nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", name)}
	}
	maxTables, maxRows := ss.tempLimits()
	if len(ss.temps) >= maxTables {
		return "", nil, nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("a session may hold at most %d temporary tables (sql_max_temp_tables); drop one first", maxTables)}
	}
	sel := &selectStmt{ss: ss, text: d.query}
	stmt, err := ss.parseOne(ctx, d.query)
	if err != nil {
		return "", nil, nil, err
	}
	if sel.tree, err = json.Marshal(stmt); err != nil {
		return "", nil, nil, err
	}
	if err := sel.plan(ctx); err != nil {
		return "", nil, nil, err
	}
	defer sel.closeDuck()
	read = sel.tables
	// One row over the room left tells an overflow from a fit.
	room := maxRows - ss.tempRows
	q := fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM (%s) LIMIT %d", quoteIdent(name), sel.query, room+1)
	if _, err := ss.conn.ExecContext(ctx, q, nil); err != nil {
		return "", nil, read, err
	}
	v, err := ss.scalar(ctx, "SELECT CAST(count(*) AS VARCHAR) FROM "+quoteIdent(name)+" WHERE $1::VARCHAR IS NOT NULL", "")
	var n int64
	if err == nil {
		_, err = fmt.Sscan(v, &n)
	}
	if err != nil {
		_ = ss.dropDuckTemp(ctx, name)
		return "", nil, read, err
	}
	if n > room {
		_ = ss.dropDuckTemp(ctx, name)
		return "", nil, read, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("a session's temporary tables may hold at most %d rows together (sql_max_temp_rows); %d are held", maxRows, ss.tempRows)}
	}
	if ss.temps == nil {
		ss.temps = map[string]int64{}
	}
	ss.temps[key] = n
	ss.tempRows += n
	return fmt.Sprintf("SELECT %d", n), nil, read, nil
}

// dropTemp runs DROP TABLE name of a temporary table.
func (ss *session) dropTemp(ctx context.Context, d *ddlParsed) error {
	key := strings.ToLower(d.path[0])
	n, ok := ss.temps[key]
	if !ok {
		if d.ifExists {
			return nil
		}
		return &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", d.path[0]),
			Hint: "Name Floe tables as namespace.table; a one-part name is a temporary table of the session."}
	}
	if err := ss.dropDuckTemp(ctx, d.path[0]); err != nil {
		return err
	}
	delete(ss.temps, key)
	ss.tempRows -= n
	return nil
}

func (ss *session) dropDuckTemp(ctx context.Context, name string) error {
	_, err := ss.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp.main."+quoteIdent(name), nil)
	if err != nil {
		ss.e.log.ErrorContext(ctx, "sql: cannot drop a temporary table", "session", ss.pg.ID, "err", err)
	}
	return err
}
