package sqlstore

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names returned by (*Store).Dialect.
const (
	// DialectSQLite is the embedded SQLite dialect (modernc.org/sqlite).
	DialectSQLite = "sqlite"
	// DialectPostgres is the PostgreSQL dialect (pgx through database/sql).
	DialectPostgres = "postgres"
)

// timeLayout is how SQLite stores times: fixed width, UTC, microseconds, so
// that stored times compare correctly as strings.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// dialect holds what differs between the two databases. The query text itself
// is shared: it is written with ? placeholders and rebound for PostgreSQL.
type dialect struct {
	name string
	// forUpdate and forShare are appended to a SELECT that locks the rows it
	// reads until the transaction ends. SQLite needs no row locks: it has a
	// single writer and every write transaction starts with BEGIN IMMEDIATE.
	forUpdate, forShare string
	// migrationsDDL creates the table that records applied migrations.
	migrationsDDL string
}

var (
	sqliteDialect = &dialect{
		name: DialectSQLite,
		migrationsDDL: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
	}
	postgresDialect = &dialect{
		name:      DialectPostgres,
		forUpdate: " FOR UPDATE",
		forShare:  " FOR SHARE",
		migrationsDDL: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
	}
)

// rebind rewrites the ? placeholders of q into the dialect's form.
func (d *dialect) rebind(q string) string {
	if d.name != DialectPostgres {
		return q
	}
	return rebindDollar(q)
}

// rebindDollar turns each ? outside quoted literals, quoted identifiers and
// comments into $1, $2, ... in order.
func rebindDollar(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	return rebindWith(q, func(b *strings.Builder, n int) {
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	})
}

// rebindWith copies q, calling placeholder for the n-th ? that is not inside
// a '...' literal, a "..." identifier or a -- comment.
func rebindWith(q string, placeholder func(b *strings.Builder, n int)) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			// Copy through the closing quote; a doubled quote escapes itself.
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				j = len(q) - 1
			}
			b.WriteString(q[i : j+1])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i - 1
			}
			b.WriteString(q[i : i+j+1])
			i += j
		case c == '?':
			n++
			placeholder(&b, n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// timeArg converts t into the value stored for it: UTC with microsecond
// precision, as text on SQLite and as timestamptz on PostgreSQL.
func (d *dialect) timeArg(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if d.name == DialectSQLite {
		return t.Format(timeLayout)
	}
	return t
}

// dbTime scans a stored time from either dialect.
type dbTime struct{ t time.Time }

// Scan implements sql.Scanner.
func (dt *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		dt.t = v.UTC()
		return nil
	case string:
		return dt.parse(v)
	case []byte:
		return dt.parse(string(v))
	case nil:
		dt.t = time.Time{}
		return nil
	}
	return fmt.Errorf("cannot scan %T into a time", src)
}

func (dt *dbTime) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("parse stored time: %w", err)
	}
	dt.t = t.UTC()
	return nil
}

// retryable reports whether err aborted a transaction that may simply be run
// again: a serialization failure or a deadlock on PostgreSQL.
func (d *dialect) retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}

// transient reports whether err is a temporary contention failure, which
// callers see as floe.Unavailable.
func (d *dialect) transient(err error) bool {
	if d.retryable(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "55P03" || pe.Code == "53300" // lock_not_available, too_many_connections
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// foreignKeyViolation reports whether err is a foreign key failure.
func (d *dialect) foreignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}

// isPostgresDSN reports whether dsn is a PostgreSQL URL.
func isPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// isMemoryDSN reports whether a SQLite DSN names an in-memory database, which
// each connection would see as a different database.
func isMemoryDSN(dsn string) bool {
	return strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory")
}

// sqliteDSN returns dsn with the parameters every pooled connection needs
// added, unless dsn already sets them: WAL, synchronous=NORMAL, foreign keys,
// a busy timeout, temporary storage in memory, and BEGIN IMMEDIATE for write transactions (write) or
// query_only (not write).
func sqliteDSN(dsn string, write bool) (string, error) {
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("parse sqlite dsn parameters: %w", err)
	}
	has := func(pragma string) bool {
		for _, v := range q["_pragma"] {
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), pragma) {
				return true
			}
		}
		return false
	}
	var add []string
	for _, p := range []struct{ name, value string }{
		{"busy_timeout", "busy_timeout(10000)"},
		{"journal_mode", "journal_mode(WAL)"},
		{"synchronous", "synchronous(NORMAL)"},
		{"foreign_keys", "foreign_keys(1)"},
		// Statement journals (a multi-row INSERT in a transaction needs
		// one) stay in memory instead of spilling to temporary files.
		{"temp_store", "temp_store(MEMORY)"},
	} {
		if !has(p.name) {
			add = append(add, "_pragma="+url.QueryEscape(p.value))
		}
	}
	if write {
		if q.Get("_txlock") == "" {
			add = append(add, "_txlock=immediate")
		}
	} else if q.Get("_query_only") == "" {
		add = append(add, "_query_only=1")
	}
	if len(add) == 0 {
		return dsn, nil
	}
	if query != "" {
		return base + "?" + query + "&" + strings.Join(add, "&"), nil
	}
	return base + "?" + strings.Join(add, "&"), nil
}
