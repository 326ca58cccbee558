package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache prepares each read query once per pool. modernc's SQLite driver
// otherwise parses the SQL text on every call, which was a third of the CPU
// of a loadTable request. The queries are the package's own constant strings,
// so the cache is bounded by the code. (pgx caches prepared statements per
// connection by itself, so PostgreSQL reads do not use this.)
type stmtCache struct {
	db *sql.DB
	m  sync.Map // query text -> *sql.Stmt
}

func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// ExecContext runs a statement through the cache.
func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs a query through the cache.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a single-row query through the cache. A prepare
// error surfaces from Scan, as with *sql.DB.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// close releases every prepared statement.
func (c *stmtCache) close() {
	c.m.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close()
		c.m.Delete(k)
		return true
	})
}
