// Package sqlstore is Floe's SQL metadata store: one database/sql
// implementation of catalog.Store, auth.Store, audit.Store and sharing.Store, plus the idempotency cache
// of the REST layer, with two dialects.
//
//   - SQLite (modernc.org/sqlite, pure Go) for a single node: a file path or a
//     file: DSN. Connections run in WAL mode with synchronous=NORMAL, foreign
//     keys on and a 10 s busy timeout. Writes go through one dedicated
//     connection whose transactions begin IMMEDIATE, so writers queue in the
//     Go pool instead of failing with SQLITE_BUSY; reads use a separate pool of
//     query-only connections.
//   - PostgreSQL (github.com/jackc/pgx/v5 through database/sql) for several
//     nodes: a postgres:// or postgresql:// URL. Rows read before an update
//     are locked with SELECT ... FOR UPDATE, pointer swaps are conditional
//     UPDATEs, and transactions that fail with a serialization failure or a
//     deadlock are retried a few times.
//
// Both share the query text (written with ? placeholders and rebound to $n for
// PostgreSQL). The schema is created and upgraded by embedded, numbered
// migrations that Open applies in order, each in its own transaction.
//
// All errors are *floe.Error values: the kinds documented by the interfaces
// (NotFound, AlreadyExists, NotEmpty, Conflict, Invalid), Unavailable for
// contention that outlasted the retries, and Internal (wrapping the driver
// error) for everything else.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
)

var (
	_ catalog.Store = (*Store)(nil)
	_ auth.Store    = (*Store)(nil)
	_ audit.Store   = (*Store)(nil)
)

// DefaultIdempotencyLifetime is how long a cached idempotent response is kept
// when Options.IdempotencyLifetime is zero.
const DefaultIdempotencyLifetime = 30 * time.Minute

// maxTxAttempts bounds how often a transaction aborted by a serialization
// failure or deadlock is run.
const maxTxAttempts = 5

// Options configures a Store. Zero values mean defaults.
type Options struct {
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// IdempotencyLifetime is how long LoadIdempotent returns a saved
	// response (default 30 minutes).
	IdempotencyLifetime time.Duration
	// MaxOpenConns bounds the connection pool: the read pool on SQLite (the
	// write pool always has one connection), the whole pool on PostgreSQL.
	// Zero means max(4, GOMAXPROCS) on SQLite and 10 on PostgreSQL.
	MaxOpenConns int
	// Observe, if set, is told the latency of every write transaction (op:
	// its name, e.g. "swap pointers"; retries included) and of every read
	// query on the read pool (op "read"; until the first row is ready).
	Observe func(op string, d time.Duration)
}

// Store is the SQL metadata store. It is safe for concurrent use.
type Store struct {
	d      *dialect
	wdb    *sql.DB    // write transactions (one connection on SQLite)
	rdb    *sql.DB    // reads; the same pool as wdb except on file-backed SQLite
	rcache *stmtCache // prepared read statements on SQLite
	// wstmts are hot write-transaction statements prepared once on the
	// write connection (SQLite only; keyed by rebound query text).
	wstmts map[string]*sql.Stmt
	log    *slog.Logger
	now    func() time.Time
	// observe is Options.Observe (nil: none).
	observe  func(op string, d time.Duration)
	lifetime time.Duration
	// lastSweep is the time (Unix nanoseconds of now()) of the last removal
	// of expired idempotency rows.
	lastSweep atomic.Int64
	// lastJTISweep and lastRevokedSweep are the times of the last removal of
	// expired used_jtis and revoked_tokens rows.
	lastJTISweep, lastRevokedSweep atomic.Int64
}

// Open connects to the database named by dsn, applies pending migrations and
// returns the store. dsn is a postgres:// or postgresql:// URL, or else a
// SQLite path or file: DSN (parameters such as _pragma=... are kept; the
// store adds the pragmas it needs unless dsn sets them).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if dsn == "" {
		return nil, floe.E(floe.Invalid, "", "sqlstore: empty DSN")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdempotencyLifetime <= 0 {
		opts.IdempotencyLifetime = DefaultIdempotencyLifetime
	}
	s := &Store{log: opts.Logger, now: opts.Now, lifetime: opts.IdempotencyLifetime, observe: opts.Observe}
	s.lastSweep.Store(opts.Now().UnixNano())
	s.lastJTISweep.Store(opts.Now().UnixNano())
	s.lastRevokedSweep.Store(opts.Now().UnixNano())
	var err error
	if isPostgresDSN(dsn) {
		err = s.openPostgres(dsn, opts)
	} else {
		err = s.openSQLite(dsn, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := s.wdb.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlstore: connect to %s: %w", s.d.name, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.prepareWrites(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// prepareWrites prepares the statements of the hottest write transactions
// (the audit log's appends) on SQLite's single write connection, where
// modernc's driver would otherwise parse their text in every transaction.
// They must be prepared here, outside any transaction: preparing on the
// pool while a transaction holds its only connection would wait forever.
// (pgx caches prepared statements per connection by itself.)
func (s *Store) prepareWrites(ctx context.Context) error {
	if s.d.name != DialectSQLite {
		return nil
	}
	qs := []string{auditHeadForUpdate, auditHeadUpdate}
	for _, n := range auditInsertSizes {
		qs = append(qs, auditInsert(n))
	}
	s.wstmts = make(map[string]*sql.Stmt, len(qs))
	for _, q := range qs {
		q = s.d.rebind(q)
		st, err := s.wdb.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlstore: prepare %q: %w", q, err)
		}
		s.wstmts[q] = st
	}
	return nil
}

func (s *Store) openPostgres(dsn string, opts Options) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("sqlstore: parse postgres DSN: %w", err)
	}
	n := opts.MaxOpenConns
	if n <= 0 {
		n = 10
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s.d, s.wdb, s.rdb = postgresDialect, db, db
	return nil
}

func (s *Store) openSQLite(dsn string, opts Options) error {
	s.d = sqliteDialect
	wdsn, err := sqliteDSN(dsn, true)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if s.wdb, err = sql.Open("sqlite", wdsn); err != nil {
		return fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	// One write connection: writers wait for it in the pool, so they never
	// contend for SQLite's write lock among themselves.
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if isMemoryDSN(dsn) {
		// Every connection to an in-memory database sees its own database,
		// so reads share the single connection.
		s.rdb = s.wdb
		return nil
	}
	rdsn, err := sqliteDSN(dsn, false)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if s.rdb, err = sql.Open("sqlite", rdsn); err != nil {
		s.wdb.Close()
		return fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	n := opts.MaxOpenConns
	if n <= 0 {
		n = max(32, 8*runtime.GOMAXPROCS(0))
	}
	s.rdb.SetMaxOpenConns(n)
	s.rdb.SetMaxIdleConns(n)
	s.rcache = &stmtCache{db: s.rdb}
	return nil
}

// Close closes the database connections.
func (s *Store) Close() error {
	if s.rcache != nil {
		s.rcache.close()
	}
	for _, st := range s.wstmts {
		_ = st.Close()
	}
	err := s.wdb.Close()
	if s.rdb != s.wdb {
		err = errors.Join(err, s.rdb.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlstore: close: %w", err)
	}
	return nil
}

// Dialect returns "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.name }

// queryer is what *sql.DB and *sql.Tx have in common.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn runs dialect-neutral query text on a pool or in a transaction.
type conn struct {
	q queryer
	d *dialect
	// tx and pre are set in write transactions on SQLite: statements
	// found in pre run as tx's copy of the prepared statement.
	tx  *sql.Tx
	pre map[string]*sql.Stmt
	// observe is Options.Observe on read conns (nil in transactions).
	observe func(op string, d time.Duration)
}

func (c conn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	query = c.d.rebind(query)
	var res sql.Result
	var err error
	if st := c.pre[query]; st != nil && c.tx != nil {
		res, err = c.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		res, err = c.q.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

func (c conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if c.observe != nil {
		defer c.observed(time.Now())
	}
	if c.tx == nil && spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "store.read")
		defer span.End()
	}
	return c.q.QueryContext(ctx, c.d.rebind(query), args...)
}

// observed reports a read that started at start.
func (c conn) observed(start time.Time) { c.observe("read", time.Since(start)) }

func (c conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = c.d.rebind(query)
	if st := c.pre[query]; st != nil && c.tx != nil {
		return c.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	if c.observe != nil {
		defer c.observed(time.Now())
	}
	if c.tx == nil && spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "store.read")
		defer span.End()
	}
	return c.q.QueryRowContext(ctx, query, args...)
}

// exists reports whether query returns a row.
func (c conn) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var one int
	err := c.queryRow(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// read returns a conn on the read pool.
func (s *Store) read() conn {
	if s.rcache != nil {
		return conn{q: s.rcache, d: s.d, observe: s.observe}
	}
	return conn{q: s.rdb, d: s.d, observe: s.observe}
}

// write runs fn in a write transaction, committing if fn returns nil. A
// transaction aborted by a serialization failure or deadlock is run again,
// so fn may be called more than once. Errors that fn returns as *floe.Error
// are returned unchanged; any other failure is reported by s.fail.
func (s *Store) write(ctx context.Context, op string, fn func(c conn) error) (err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "store.write "+op)
		defer func() { spans.End(span, err) }()
	}
	if s.observe != nil {
		start := time.Now()
		defer func() { s.observe(op, time.Since(start)) }()
	}
	for attempt := 1; ; attempt++ {
		err := s.tryWrite(ctx, fn)
		if err == nil {
			return nil
		}
		var fe *floe.Error
		if errors.As(err, &fe) {
			return err
		}
		if s.d.retryable(err) && attempt < maxTxAttempts && ctx.Err() == nil {
			s.log.DebugContext(ctx, "sqlstore: retrying transaction", "op", op, "attempt", attempt, "err", err)
			sleep(ctx, time.Duration(attempt)*time.Millisecond+rand.N(5*time.Millisecond))
			continue
		}
		return s.fail(op, err)
	}
}

func (s *Store) tryWrite(ctx context.Context, fn func(c conn) error) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(conn{q: tx, d: s.d, tx: tx, pre: s.wstmts}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// fail turns an unexpected database error into a *floe.Error: Unavailable
// for contention, Internal otherwise; both wrap err for the logs.
func (s *Store) fail(op string, err error) error {
	var fe *floe.Error
	if errors.As(err, &fe) {
		return err
	}
	wrapped := fmt.Errorf("sqlstore: %s: %w", op, err)
	if s.d.transient(err) {
		return &floe.Error{Kind: floe.Unavailable, Msg: "the metadata store is busy; retry", Err: wrapped}
	}
	return &floe.Error{Kind: floe.Internal, Err: wrapped}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
