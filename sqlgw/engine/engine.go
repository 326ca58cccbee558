package engine

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
	"github.com/floe-lake/floe/sqlgw/viewrename"
)

// Tables opens Floe tables as iceberg-go tables (*lake.Lake).
type Tables interface {
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*table.Table, error)
}

// Lister lists namespaces and tables (*catalog.Catalog); the engine uses
// it to answer catalog queries (psql's \dt, information_schema).
type Lister interface {
	ListNamespaces(ctx context.Context, wh string, parent catalog.Namespace, after string, limit int) ([]catalog.Namespace, error)
	List(ctx context.Context, wh string, ns catalog.Namespace, kind catalog.Kind, after string, limit int) ([]string, error)
}

// Policies returns the current authorization policy (*authz.Authorizer).
type Policies interface {
	Policy(ctx context.Context) (*authz.Policy, error)
}

// Caller is what the engine needs to know about a session's principal; the
// Authenticator puts it in pgwire.Identity.Payload.
type Caller struct {
	// Subject is the principal, judged by the authorization policy.
	Subject authz.Subject
	// Unrestricted callers read everything (authentication or
	// authorization is off).
	Unrestricted bool
	// ReadOnly callers may not change tables (a token with scope
	// catalog:read), whatever their grants.
	ReadOnly bool
	// TokenID is the id (jti) of the access token the session logged in
	// with; "" for a SQL password. Every sql.query event names it, as the
	// catalog's events do.
	TokenID string
	// RoomsOnly callers (recipients: another organisation's members of
	// clean rooms) may only query inside a collaboration: any other
	// statement but SET, SHOW and RESET is refused (42501).
	RoomsOnly bool
}

// Defaults of Options.
const (
	DefaultCacheBytes  = 1 << 30
	DefaultCacheFiles  = 256
	DefaultMemoryLimit = "2GB"
	defaultPlanEntries = 4096
)

// Options configures an Engine.
type Options struct {
	// Warehouse is the warehouse of two-part table names (required).
	Warehouse string
	// TrinoCatalog is the name Trino deployments give this catalog
	// (default: Warehouse): the trino representation of a view the SQL
	// endpoint creates names its tables in it (viewdialect.go).
	TrinoCatalog string
	// Tables loads tables (required).
	Tables Tables
	// Catalog lists namespaces and tables (required).
	Catalog Lister
	// Foreign opens the tables of foreign (federated) catalogs, read-only
	// and in place (foreign.go); nil: three-part names reach local
	// warehouses only.
	Foreign ForeignTables
	// Policies is the authorization policy; nil makes every caller
	// unrestricted.
	Policies Policies
	// Objects reads data files (required).
	Objects ObjectSource
	// CacheBytes bounds the in-memory copies of encrypted or remote data
	// files (default DefaultCacheBytes).
	CacheBytes int64
	// CacheFiles bounds the number of those copies, each an open descriptor
	// (default DefaultCacheFiles). A query pins the files it reads while it
	// runs (it may hold more then); once it ends, at most CacheFiles stay.
	CacheFiles int
	// MemoryLimit is DuckDB's memory_limit for each session (default
	// DefaultMemoryLimit).
	MemoryLimit string
	// Threads is DuckDB's thread count for each session (0: DuckDB's
	// default, the number of cores).
	Threads int
	// TableCacheBytes bounds the data and delete files (by their size) of
	// the small tables each session keeps decoded in memory, read at one
	// snapshot, so that repeated queries over them skip reading Parquet; a
	// table qualifies when its files total at most a quarter of it
	// (default DefaultTableCacheBytes; negative: off).
	TableCacheBytes int64
	// PlanCacheBytes bounds the estimated memory of the scan plans the
	// engine caches (default DefaultPlanCacheBytes).
	PlanCacheBytes int64
	// DDL runs DDL statements (CREATE/DROP SCHEMA, CREATE/DROP/ALTER
	// TABLE, ...) and the commits of transaction blocks (*catalog.Catalog);
	// nil refuses them.
	DDL DDLCatalog
	// Grants keeps grants in step with DDL (*authz.Authorizer): the
	// creator of a schema or table owns it; nil grants nothing.
	Grants Grants
	// MaxTxnStatements bounds the table changes one transaction block
	// stages (default DefaultMaxTxnStatements).
	MaxTxnStatements int
	// MaxTempTables bounds the temporary tables one session holds
	// (default DefaultMaxTempTables); MaxTempRows bounds their rows
	// together (default DefaultMaxTempRows).
	MaxTempTables int
	MaxTempRows   int
	// CleanRooms are the collaborations sessions may query in (SET
	// floe.collaboration, cleanroom.go); nil refuses them. Clean rooms
	// need Policies.
	CleanRooms CleanRooms
	// Metrics answers floe_metric, the table function of data product
	// metrics (metrics.go); nil refuses it.
	Metrics Metrics
	// Audit receives one event per query; nil drops them.
	Audit func(context.Context, audit.Event)
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Engine runs the SQL endpoint's queries with DuckDB: each session has its
// own in-memory DuckDB database, locked down (no file access outside the
// planned data files, no extensions, no configuration changes), and each
// Floe table a query names becomes a subquery over the table's data files
// at the chosen snapshot, with deletes applied and the caller's data
// filters enforced. It implements pgwire.Engine and pgwire.SessionHooks.
type Engine struct {
	// rewriter writes the trino representation of views (viewdialect.go).
	rewriter *viewrename.Rewriter
	opts     Options
	log      *slog.Logger
	files    *fileCache
	plans    *planCache
	filters  *lru.Cache[string, string] // row filter and its column names -> canonical SQL, "" if refused
	trees    *lru.Cache[string, []byte] // a view's expansion SQL -> its syntax tree (JSON), see views.go
	unique   *lru.Cache[string, bool]   // a table snapshot's identifier column -> unique (cleanroom.go)
	queries  atomic.Uint64
	kept     tableCacheCounters
	planned  planCounters
}

// planCounters count the scan plans made: in full, and from a parent
// snapshot's plan (appendPlan).
type planCounters struct {
	full, appended atomic.Uint64
}

// PlanStats returns how many scan plans the engine made in full (every
// manifest read) and how many from the cached plan of the snapshot's
// parent (only the manifests the snapshot added read).
func (e *Engine) PlanStats() (full, appended uint64) {
	return e.planned.full.Load(), e.planned.appended.Load()
}

var (
	_ pgwire.Engine       = (*Engine)(nil)
	_ pgwire.SessionHooks = (*Engine)(nil)
)

// New returns an engine with opts.
func New(opts Options) (*Engine, error) {
	if opts.Tables == nil || opts.Catalog == nil || opts.Objects == nil || opts.Warehouse == "" {
		return nil, errors.New("engine: Warehouse, Tables, Catalog and Objects are required")
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.CacheFiles <= 0 {
		opts.CacheFiles = DefaultCacheFiles
	}
	if opts.MemoryLimit == "" {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.TableCacheBytes == 0 {
		opts.TableCacheBytes = DefaultTableCacheBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PlanCacheBytes <= 0 {
		opts.PlanCacheBytes = DefaultPlanCacheBytes
	}
	plans, err := newPlanCache(defaultPlanEntries, opts.PlanCacheBytes)
	if err != nil {
		return nil, err
	}
	filters, err := newFilterCache()
	if err != nil {
		return nil, err
	}
	if opts.TrinoCatalog == "" {
		opts.TrinoCatalog = opts.Warehouse
	}
	trees, err := lru.New[string, []byte](maxViewTrees)
	if err != nil {
		return nil, err
	}
	unique, err := lru.New[string, bool](maxUniqueIdentifiers)
	if err != nil {
		return nil, err
	}
	return &Engine{opts: opts, log: opts.Logger, files: newFileCache(opts.Objects, opts.CacheBytes, opts.CacheFiles), plans: plans, filters: filters,
		rewriter: viewrename.New(), trees: trees, unique: unique}, nil
}

// Close releases the file cache. Sessions must have ended.
func (e *Engine) Close() error {
	e.files.close()
	return e.rewriter.Close()
}

// TableCacheStats reports how often sessions found a table's rows kept in
// memory (see Options.TableCacheBytes).
func (e *Engine) TableCacheStats() TableCacheStats {
	return TableCacheStats{Hits: e.kept.hits.Load(), Misses: e.kept.misses.Load(), Evictions: e.kept.evictions.Load()}
}

// CacheStats reports the bytes and number of data files held in memory.
func (e *Engine) CacheStats() (bytes int64, files int) { return e.files.stats() }

// session is the engine's state of one pgwire session.
type session struct {
	e            *Engine
	pg           *pgwire.Session
	sub          authz.Subject
	tokenID      string // the login token's id; "" for a SQL password
	unrestricted bool
	readOnly     bool
	dmlSeq       int // names the temporary tables of DML statements
	db           *duckdb.Connector
	conn         *duckdb.Conn
	catalogSig   string          // what the catalog stand-ins were built from
	savepoints   []string        // the transaction's savepoints (at most maxSavepoints)
	lazyMade     map[string]bool // the lazyMacros created (at most len(lazyMacros))
	tables       *tableCache
	txn          *txnState        // the open transaction block's staged changes
	temps        map[string]int64 // temporary tables (lower case) and their rows (temp.go)
	tempRows     int64
	room         string // the collaboration the session queries in (cleanroom.go); "" for none
	roomsOnly    bool   // Caller.RoomsOnly
}

// StartSession opens the session's DuckDB database.
func (e *Engine) StartSession(ctx context.Context, s *pgwire.Session) error {
	c, ok := s.Identity.Payload.(Caller)
	if !ok {
		return &pgwire.Error{Code: pgwire.CodeInvalidAuthorization, Message: "the session has no Floe principal"}
	}
	if e.opts.Policies == nil {
		c.Unrestricted = true
	}
	db, err := duckdb.NewConnector("", nil)
	if err != nil {
		return fmt.Errorf("open duckdb: %w", err)
	}
	dc, err := db.Connect(ctx)
	if err != nil {
		db.Close()
		return fmt.Errorf("connect duckdb: %w", err)
	}
	ss := &session{e: e, pg: s, sub: c.Subject, tokenID: c.TokenID, unrestricted: c.Unrestricted, readOnly: c.ReadOnly || c.RoomsOnly, roomsOnly: c.RoomsOnly, db: db, conn: dc.(*duckdb.Conn), tables: newTableCache(e.opts.TableCacheBytes)}
	if err := ss.configure(ctx); err != nil {
		ss.close()
		return err
	}
	s.State = ss
	return nil
}

// EndSession closes the session's DuckDB database.
func (e *Engine) EndSession(s *pgwire.Session) {
	if ss, ok := s.State.(*session); ok {
		ss.close()
	}
}

func (ss *session) close() {
	if ss.txn != nil && len(ss.txn.schemas) > 0 {
		// A connection that ends inside a block rolls it back.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ss.undoSchemas(ctx, ss.txn)
		cancel()
	}
	_ = ss.conn.Close()
	_ = ss.db.Close()
}

// configure locks the session's database down: no extension loading, no
// file access except the warehouse directories and the in-memory copies,
// no file caches keyed by path, no spilling of plaintext to disk, UTC, and
// then no further configuration changes.
func (ss *session) configure(ctx context.Context) error {
	o := ss.e.opts
	dirs := append([]string{fdDir}, o.Objects.Dirs()...)
	for i, d := range dirs {
		if !strings.HasSuffix(d, "/") {
			dirs[i] = d + "/"
		}
	}
	stmts := append(attachStatements(o.Warehouse),
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
		"SET enable_external_file_cache = false",
		"SET parquet_metadata_cache = false",
		"SET temp_directory = ''",
		"SET TimeZone = 'UTC'",
		"SET memory_limit = "+sqlString(o.MemoryLimit),
		"SET allowed_directories = "+sqlList(dirs),
		"SET enable_external_access = false",
		"SET allow_community_extensions = false",
		"SET lock_configuration = true",
	)
	if o.Threads > 0 {
		stmts = append(stmts[:len(stmts)-1], fmt.Sprintf("SET threads = %d", o.Threads), stmts[len(stmts)-1])
	}
	// The macros in one batch: a round trip into DuckDB each costs more
	// than creating a macro.
	var macros []string
	for _, name := range slices.Sorted(maps.Keys(pgMacros)) {
		macros = append(macros, "CREATE MACRO "+name+pgMacros[name])
	}
	version, _ := ss.pg.Setting("server_version")
	macros = append(macros, sessionMacroStatements(sessionIdentity{user: ss.pg.Identity.Principal, warehouse: o.Warehouse, version: version, pid: ss.pg.ProcessID})...)
	stmts = append(stmts, strings.Join(macros, ";\n"))
	for _, q := range stmts {
		if _, err := ss.conn.ExecContext(ctx, q, nil); err != nil {
			return fmt.Errorf("configure duckdb (%.200s): %w", q, err)
		}
	}
	return nil
}

// serialize parses one SQL text with DuckDB into syntax trees.
func (ss *session) serialize(ctx context.Context, sql string) ([]node, error) {
	sql = rewriteRegclass(sql)
	js, err := ss.scalar(ctx, "SELECT CAST(json_serialize_sql($1::VARCHAR) AS VARCHAR)", sql)
	if err != nil {
		return nil, err
	}
	var out serialized
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("json_serialize_sql: %w", err)
	}
	if out.Error {
		return nil, &parseError{typ: out.ErrorType, msg: out.ErrorMessage, pos: out.Position}
	}
	stmts := make([]node, len(out.Statements))
	for i, raw := range out.Statements {
		if err := unmarshalTree(raw, &stmts[i]); err != nil {
			return nil, fmt.Errorf("json_serialize_sql: %w", err)
		}
	}
	return stmts, nil
}

// regclassLiteral matches 'name'::regclass, which JDBC's and BI tools'
// catalog queries use and DuckDB cannot cast (regclass is an integer there).
var regclassLiteral = regexp.MustCompile(`'([A-Za-z0-9_.]*)'\s*::\s*(?:pg_catalog\.)?regclass\b`)

// rewriteRegclass turns 'name'::regclass into a lookup of the name in
// pg_class (the floe_regclass macro).
func rewriteRegclass(sql string) string {
	if !strings.Contains(strings.ToLower(sql), "regclass") {
		return sql
	}
	return regclassLiteral.ReplaceAllString(sql, "pg_catalog.floe_regclass('$1')")
}

// parseError is a statement json_serialize_sql did not take.
type parseError struct{ typ, msg, pos string }

func (p *parseError) Error() string { return p.typ + ": " + p.msg }

// deserialize renders a syntax tree back to SQL.
func (ss *session) deserialize(ctx context.Context, stmt node) (string, error) {
	js, err := json.Marshal(map[string]any{"error": false, "statements": []any{stmt}})
	if err != nil {
		return "", err
	}
	return ss.scalar(ctx, "SELECT json_deserialize_sql($1::JSON)", string(js))
}

// epochMillis converts a timestamp literal to Unix milliseconds (UTC
// unless it names a zone).
func (ss *session) epochMillis(ctx context.Context, ts string) (int64, error) {
	v, err := ss.scalar(ctx, "SELECT CAST(epoch_ms(CAST($1::VARCHAR AS TIMESTAMPTZ)) AS VARCHAR)", ts)
	if err != nil {
		return 0, &pgwire.Error{Code: pgwire.CodeInvalidDatetimeFormat, Message: fmt.Sprintf("invalid timestamp %q in AT (TIMESTAMP => ...)", ts)}
	}
	var ms int64
	if _, err := fmt.Sscan(v, &ms); err != nil {
		return 0, err
	}
	return ms, nil
}

// scalar runs a one-value query with one string argument.
func (ss *session) scalar(ctx context.Context, q, arg string) (string, error) {
	rows, err := ss.conn.QueryContext(ctx, q, []driver.NamedValue{{Ordinal: 1, Value: arg}})
	if err != nil {
		return "", err
	}
	defer rows.Close()
	dst := make([]driver.Value, 1)
	if err := rows.Next(dst); err != nil {
		return "", err
	}
	s, _ := dst[0].(string)
	return s, nil
}

// Prepare parses, checks and plans one statement.
func (e *Engine) Prepare(ctx context.Context, s *pgwire.Session, sql string, paramOIDs []uint32) (pgwire.Statement, error) {
	ss, ok := s.State.(*session)
	if !ok {
		return nil, errNoSession
	}
	if sp, ok := parseSavepoint(sql); ok {
		return ss.savepoint(sp)
	}
	if u, ok := parseUtility(sql); ok {
		return ss.utility(u)
	}
	if call, ok, err := parseExecuteTemplate(sql); ok {
		if err == nil && ss.room == "" {
			err = &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: "EXECUTE TEMPLATE runs a template of a collaboration: SET floe.collaboration = 'name' first"}
		}
		failed := &selectStmt{ss: ss, text: sql, room: ss.room}
		if err != nil {
			ss.auditQuery(ctx, failed, -1, err)
			return nil, err
		}
		st := &selectStmt{ss: ss, text: sql, room: ss.room, template: &call}
		if err := st.plan(ctx); err != nil {
			ss.auditQuery(ctx, failed, -1, err)
			return nil, failed.publicError(err)
		}
		st.pins.release()
		st.pins = nil
		return st, nil
	}
	if ss.roomsOnly && ss.room == "" {
		err := &pgwire.Error{Code: pgwire.CodeInsufficientPrivilege,
			Message: fmt.Sprintf("%s may only query in a clean-room collaboration it is a member of: SET %s = 'name' first", ss.sub, collaborationSetting)}
		ss.auditQuery(ctx, &selectStmt{ss: ss, text: sql}, -1, err)
		return nil, err
	}
	if ss.room != "" && (ddlKeyword(sql) || dmlKeyword(sql) != 0) {
		err := ruleError(ruleStatement, "only queries run in a collaboration: %s statements are refused (RESET %s to leave it)",
			strings.ToUpper(firstWord(sql)), collaborationSetting)
		ss.auditQuery(ctx, &selectStmt{ss: ss, text: sql, room: ss.room}, -1, err)
		return nil, err
	}
	if ddlKeyword(sql) {
		st, err := ss.prepareDDL(sql)
		if err != nil {
			ss.auditQuery(ctx, &selectStmt{text: sql}, -1, err)
			return nil, err
		}
		return st, nil
	}
	if dmlKeyword(sql) != 0 {
		st, err := ss.prepareDML(ctx, sql, paramOIDs)
		if err != nil {
			ss.auditQuery(ctx, &selectStmt{text: sql}, -1, err)
			return nil, ss.publicError(err, false)
		}
		return st, nil
	}
	st, err := ss.prepareSelect(ctx, sql, paramOIDs)
	if err != nil {
		failed := &selectStmt{ss: ss, text: sql, room: ss.room}
		ss.auditQuery(ctx, failed, -1, err)
		return nil, failed.publicError(err)
	}
	return st, nil
}

// parseOne parses a client's SQL text, which must hold one statement; a
// parse error of something the endpoint refuses says so.
func (ss *session) parseOne(ctx context.Context, sql string) (node, error) {
	stmts, err := ss.serialize(ctx, sql)
	if err != nil {
		var pe *parseError
		if errors.As(err, &pe) {
			return nil, classifyRefused(sql, pe)
		}
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, syntaxError("send one statement at a time")
	}
	return stmts[0], nil
}

// prepareSelect checks and plans a query.
func (ss *session) prepareSelect(ctx context.Context, sql string, paramOIDs []uint32) (*selectStmt, error) {
	stmt, err := ss.parseOne(ctx, sql)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(stmt)
	if err != nil {
		return nil, err
	}
	st := &selectStmt{ss: ss, text: sql, tree: raw, paramOIDs: paramOIDs, room: ss.room}
	if err := st.plan(ctx); err != nil {
		return nil, err
	}
	// Every execution plans again and pins what it reads; a statement that
	// waits for its execution holds no file.
	st.pins.release()
	st.pins = nil
	return st, nil
}

// classifyRefused explains why a statement that is not a query does not run.
func classifyRefused(sql string, pe *parseError) error {
	if pe.typ == "parser" || !strings.Contains(pe.msg, "Only SELECT") {
		msg := pe.msg
		if i := strings.Index(msg, "\nLINE "); i >= 0 {
			msg = msg[:i]
		}
		return &pgwire.Error{Code: pgwire.CodeSyntaxError, Message: strings.TrimSpace(msg)}
	}
	kw := strings.ToUpper(firstWord(sql))
	switch kw {
	case "EXPLAIN":
		return unsupported("EXPLAIN is not supported")
	}
	return refused("%s statements are not allowed through the SQL endpoint; it runs queries, INSERT/UPDATE/DELETE/MERGE, "+
		"CREATE/DROP SCHEMA, CREATE/DROP/ALTER TABLE, TRUNCATE, COMMENT ON and transactions (see docs/sql.md)", kw)
}

// selectStmt is a prepared query.
type selectStmt struct {
	ss        *session
	text      string // the client's SQL
	tree      []byte // its checked syntax tree, before rewriting
	paramOIDs []uint32
	// room is the collaboration the statement was prepared in ("" for
	// none); its result leaves out the rows below the thresholds, counted
	// in suppressed (cleanroom.go).
	room       string
	suppressed int64
	// dp plans the noise of a clean-room statement under differential
	// privacy (dp.go); charged and remaining are its last execution's
	// charge of the privacy budget and what remained (remaining is nil
	// when the budget was not read).
	dp *dpPlan
	// roomHidden is how many columns the clean-room rewrite appended
	// (the threshold test; none for a list).
	roomHidden int
	// template is the EXECUTE TEMPLATE call the statement runs (nil for
	// a query): its tree is the template's, bound, at every plan.
	template  *templateCall
	charged   float64
	remaining *float64

	stmt     *duckdb.Stmt
	query    string // the rewritten query stmt was prepared from
	sig      string // the views it was prepared with
	tables   []string
	filtered bool
	files    int // data files the last plan reads
	pruned   int // data files it skipped by their statistics
	pins     *pinSet
	params   []uint32
	cols     []pgwire.Column
	convs    []func(any) any
}

// plan resolves the statement's tables and prepares the rewritten query
// with DuckDB, unless the views are the same as last time.
func (st *selectStmt) plan(ctx context.Context) (err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "sql.plan")
		defer func() { spans.End(span, err) }()
	}
	ss := st.ss
	var (
		stmt node
		tmpl *cleanroom.Template
	)
	if st.template != nil {
		// Fetched and bound at every plan: a template removed, or no
		// longer allowed, stops running.
		stmt, tmpl, st.tree, err = ss.templateTree(ctx, st.room, st.template)
		if err != nil {
			return err
		}
	} else if err := unmarshalTree(st.tree, &stmt); err != nil {
		return err
	}
	var a *analysis
	if st.room != "" {
		var c *roomCheck
		a, c, err = ss.analyzeRoom(ctx, st.room, stmt, tmpl)
		if c != nil {
			st.dp, st.roomHidden = c.dp, c.hidden()
		}
	} else {
		a, err = ss.analyzeViews(ctx, stmt, "")
	}
	if err != nil {
		return err
	}
	attachPruning(stmt, a.refs)
	qualifiedColumns(stmt, a.refs)
	if err := ss.createLazyMacros(ctx, a.macros); err != nil {
		return err
	}
	if mentionsLineage(st.tree) {
		for _, ref := range a.refs {
			ref.lineage = true
		}
	}
	if a.system {
		if err := ss.syncCatalog(ctx); err != nil {
			return err
		}
	}
	pins := &pinSet{c: ss.e.files}
	var (
		sig      strings.Builder
		tables   []string
		filtered bool
	)
	views := make([]*resolved, len(a.refs))
	for i, ref := range a.refs {
		r, err := ss.e.resolve(ctx, ss, ref, pins)
		if err != nil {
			pins.release()
			return err
		}
		if ref.roomTable != nil {
			bound := ref.roomDP
			for _, k := range ref.roomJoinKeys {
				// The noise is calibrated to each identifier's rows; a
				// join that matched one row many times would multiply
				// them past the declared bound.
				owned, err := ss.ownedJoinKey(ctx, r, k, ref.roomTable.Identifier)
				if err != nil {
					pins.release()
					return err
				}
				if !owned {
					pins.release()
					return ruleError(ruleDP, "join key %s of configured table %s is shared by several identifiers: under differential privacy a row may only join rows of one person, or one person's rows would count past the declared bounds (max_contributions)", k, ref.roomTable.Name)
				}
			}
			if bound {
				unique, err := ss.uniqueIdentifier(ctx, r, ref.roomTable.Identifier)
				if err != nil {
					pins.release()
					return err
				}
				bound = !unique
			}
			r.sql = projectRoom(r.sql, ref.roomTable, ref.roomDP, bound)
		}
		views[i] = r
		sig.WriteString(r.sql)
		sig.WriteByte(0)
		tables = append(tables, r.name())
		filtered = filtered || r.filtered || st.room != ""
	}
	st.files, st.pruned = 0, 0
	for _, r := range views {
		st.files += r.files
		st.pruned += r.pruned
	}
	// The same views over the same in-memory copies: DuckDB's statement
	// stands (a descriptor number alone may have been reused by another copy).
	sig.WriteString(pins.sig())
	if st.stmt != nil && sig.String() == st.sig {
		st.pins.release()
		st.pins = pins
		return nil
	}
	for i, ref := range a.refs {
		if err := ss.replace(ctx, ref, views[i].sql); err != nil {
			pins.release()
			return err
		}
	}
	for _, ref := range a.patched {
		if err := ss.replace(ctx, ref, systemPatch(ref.path)); err != nil {
			pins.release()
			return err
		}
	}
	query, err := ss.deserialize(ctx, stmt)
	if err != nil {
		pins.release()
		return err
	}
	ds, err := ss.conn.PrepareContext(ctx, query)
	if err != nil {
		pins.release()
		return err
	}
	stmtD := ds.(*duckdb.Stmt)
	params, cols, convs, err := describe(stmtD, st.paramOIDs)
	if err != nil {
		_ = stmtD.Close()
		pins.release()
		return err
	}
	if hidden := st.hidden(); hidden > 0 {
		// The threshold columns are the engine's, not the client's.
		if len(cols) < hidden || !strings.HasPrefix(cols[len(cols)-hidden].Name, thresholdAlias) ||
			!strings.HasPrefix(cols[len(cols)-1].Name, thresholdAlias) {
			_ = stmtD.Close()
			pins.release()
			return errors.New("engine: a clean-room statement lost its threshold column")
		}
		cols = cols[:len(cols)-hidden]
	}
	if st.stmt != nil && !sameShape(st.cols, cols) {
		// The client was told the result's columns when it prepared the
		// statement; a table changed since (a column added, dropped or
		// widened) changes them, which PostgreSQL refuses the same way.
		_ = stmtD.Close()
		pins.release()
		return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: "cached plan must not change result type",
			Hint: "A table the prepared statement reads changed its columns: prepare the statement again."}
	}
	st.closeDuck()
	st.query = query
	st.stmt, st.sig, st.tables, st.filtered, st.pins = stmtD, sig.String(), tables, filtered, pins
	st.params, st.cols, st.convs = params, cols, convs
	return nil
}

// hidden is how many columns the engine appended to a clean-room
// statement: the threshold test, or under differential privacy the
// planned hidden counts.
func (st *selectStmt) hidden() int {
	switch {
	case st.room == "":
		return 0
	case st.dp != nil:
		return st.dp.hidden
	}
	return st.roomHidden
}

// sameShape reports whether two result descriptions have the same column
// count and types.
func sameShape(a, b []pgwire.Column) bool {
	return slices.EqualFunc(a, b, func(x, y pgwire.Column) bool { return x.TypeOID == y.TypeOID })
}

// replace turns a table reference node into a subquery over its view.
func (ss *session) replace(ctx context.Context, ref *tableRef, view string) error {
	stmts, err := ss.serialize(ctx, view)
	if err != nil || len(stmts) != 1 {
		return fmt.Errorf("engine: the view of %s does not parse: %w", strings.Join(ref.path, "."), err)
	}
	replaceWith(ref, stmts[0])
	return nil
}

// replaceWith turns a table reference node into a subquery of the
// statement tree stmt.
func replaceWith(ref *tableRef, stmt node) {
	n := ref.n
	alias, _ := n["alias"].(string)
	if alias == "" {
		alias = ref.path[len(ref.path)-1]
	}
	sub := node{
		"type":                  "SUBQUERY",
		"alias":                 alias,
		"sample":                n["sample"],
		"query_location":        n["query_location"],
		"query_location_length": n["query_location_length"],
		"subquery":              stmt,
		"column_name_alias":     n["column_name_alias"],
	}
	if sub["column_name_alias"] == nil {
		sub["column_name_alias"] = []any{}
	}
	clear(n)
	for k, v := range sub {
		n[k] = v
	}
}

// describe reads the parameter and result types of a prepared statement.
func describe(st *duckdb.Stmt, declared []uint32) ([]uint32, []pgwire.Column, []func(any) any, error) {
	n := st.NumInput()
	params := make([]uint32, n)
	for i := range n {
		if i < len(declared) && declared[i] != 0 {
			params[i] = declared[i]
			continue
		}
		t, err := st.ParamType(i + 1)
		if err == nil {
			params[i] = paramOID(t)
		}
	}
	nc, err := st.ColumnCount()
	if err != nil {
		return nil, nil, nil, err
	}
	cols := make([]pgwire.Column, nc)
	convs := make([]func(any) any, nc)
	for i := range nc {
		name, err := st.ColumnName(i)
		if err != nil {
			return nil, nil, nil, err
		}
		t, err := st.ColumnType(i)
		if err != nil {
			return nil, nil, nil, err
		}
		oid, conv := pgType(t)
		cols[i] = pgwire.Column{Name: name, TypeOID: oid}
		convs[i] = conv
	}
	return params, cols, convs, nil
}

func (st *selectStmt) closeDuck() {
	if st.stmt != nil {
		_ = st.stmt.Close()
		st.stmt = nil
	}
	st.pins.release()
	st.pins = nil
}

// Params implements pgwire.Statement.
func (st *selectStmt) Params() []uint32 { return st.params }

// Columns implements pgwire.Statement.
func (st *selectStmt) Columns() []pgwire.Column { return st.cols }

// Close implements pgwire.Statement.
func (st *selectStmt) Close() error {
	st.closeDuck()
	return nil
}

// Execute implements pgwire.Statement. A statement prepared earlier is
// checked and planned again: the caller's privileges and the tables'
// snapshots may have changed since.
func (st *selectStmt) Execute(ctx context.Context, args []any) (pgwire.Result, error) {
	ss := st.ss
	if ss.pg.TxStatus() == pgwire.TxFailed {
		return nil, errTxFailed
	}
	// Planned again every time: privileges and snapshots may have changed
	// since Prepare. DuckDB prepares again only when a view changed.
	if err := st.plan(ctx); err != nil {
		ss.auditQuery(ctx, st, -1, err)
		return nil, st.publicError(err)
	}
	hidden := st.hidden()
	if len(st.cols)+hidden != len(st.convs) {
		return nil, errors.New("engine: statement changed shape")
	}
	st.charged, st.remaining = 0, nil
	if st.dp != nil {
		// The budget is charged before the query runs: a query refused
		// for want of budget reads nothing.
		rem, err := ss.e.opts.CleanRooms.Charge(ctx, st.room, st.dp.privacy.Epsilon)
		st.remaining = &rem
		if err != nil {
			st.pins.release()
			st.pins = nil
			err = roomRefusal(err)
			ss.auditQuery(ctx, st, -1, err)
			return nil, err
		}
		st.charged = st.dp.privacy.Epsilon
	}
	nargs := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nargs[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	// The execution holds the files it reads until its result is closed.
	pins := st.pins
	st.pins = nil
	rows, err := st.stmt.QueryContext(ctx, nargs)
	if err == nil && len(rows.Columns()) != len(st.cols)+hidden {
		// DuckDB binds some statements only once it has the parameters
		// (to_json of a parameter): their columns were not known when the
		// client was told them.
		_ = rows.Close()
		err = unsupported("the statement's result columns depend on its parameter values; write the values into the statement")
	}
	if err != nil {
		pins.release()
		ss.auditQuery(ctx, st, -1, err)
		return nil, st.publicError(err)
	}
	st.suppressed = 0
	res := &result{st: st, ctx: ctx, rows: rows, pins: pins, buf: make([]driver.Value, len(st.cols)+hidden), out: make([]any, len(st.cols)), room: hidden > 0}
	if st.dp != nil {
		res.noise = newNoise(st.dp)
	}
	return res, nil
}

// result streams the rows of one execution.
type result struct {
	st     *selectStmt
	ctx    context.Context
	pins   *pinSet // the files the execution reads
	rows   driver.Rows
	buf    []driver.Value
	out    []any
	n      int64
	err    error
	closed bool
	// room is set for a clean-room statement: the last value of buf is
	// the threshold test, and rows failing it are suppressed.
	room       bool
	suppressed int64
	// noise noises the rows under differential privacy (dp.go): it
	// decides suppression in place of the threshold column.
	noise *noise
}

// Next implements pgwire.Result.
func (r *result) Next() ([]any, error) {
	for {
		if err := r.rows.Next(r.buf); err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			r.err = err
			return nil, r.st.publicError(err)
		}
		if !r.room {
			break
		}
		if r.noise != nil {
			if r.noise.row(r.buf) {
				break
			}
		} else if ok, _ := r.buf[len(r.buf)-1].(bool); ok {
			break
		}
		r.suppressed++
	}
	for i := range r.out {
		r.out[i] = r.st.convs[i](r.buf[i])
	}
	r.n++
	return r.out, nil
}

// Tag implements pgwire.Result.
func (r *result) Tag() string { return "SELECT" }

// Close implements pgwire.Result; it records the query's audit event.
func (r *result) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	r.pins.release()
	r.st.suppressed = r.suppressed
	r.st.ss.auditQuery(r.ctx, r.st, r.n, r.err)
	return err
}

// filteredWithheld replaces the message of an error raised while reading
// a table with a data filter.
const filteredWithheld = "the query failed while reading a table with a data filter (details withheld)"

var errTxFailed = &pgwire.Error{Code: pgwire.CodeInFailedTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}

// auditQuery records one query: who, the SQL text, the tables it read,
// the data files read and skipped, how many rows it returned (-1: none, it
// failed) and the outcome.
func (ss *session) auditQuery(ctx context.Context, st *selectStmt, rows int64, err error) {
	e := ss.e
	if e.opts.Audit == nil {
		return
	}
	detail := map[string]any{"sql": st.text, "tables": st.tables, "session": ss.pg.ID, "files": st.files, "files_pruned": st.pruned}
	if st.tables == nil {
		detail["tables"] = []string{}
	}
	if err == nil {
		detail["rows"] = rows
	}
	if st.room != "" {
		detail["collaboration"] = st.room
		if err == nil {
			detail["suppressed"] = st.suppressed
		}
		if st.charged > 0 {
			detail["epsilon"] = st.charged
		}
		if st.remaining != nil {
			detail["budget_remaining"] = *st.remaining
		}
		ss.recordRoom(ctx, st, rows, err)
	}
	ss.emitAudit(ctx, detail, err)
}

// emitAudit records a statement's sql.query event with detail, adding the
// caller's token and principal ids, and the public error (SQLSTATE and
// message) when err is set. A statement refused for a missing privilege
// (SQLSTATE 42501) is outcome denied, as a refused catalog call is, with
// the missing privilege in "privilege" when the refusal names one.
func (ss *session) emitAudit(ctx context.Context, detail map[string]any, err error) {
	if ss.tokenID != "" {
		detail["token_id"] = ss.tokenID
	}
	if ss.sub.PrincipalID != "" {
		detail["principal_id"] = ss.sub.PrincipalID
	}
	outcome := audit.OutcomeSuccess
	if err != nil {
		outcome = audit.OutcomeFailure
		pe := ss.publicError(err, false)
		var perr *pgwire.Error
		code, msg := "", ""
		if errors.As(pe, &perr) {
			code, msg = perr.Code, perr.Message
			detail["error"] = perr.Code + " " + perr.Message
		} else {
			msg = floe.PublicMessage(pe)
			detail["error"] = msg
			if floe.KindOf(pe) == floe.Forbidden {
				code = pgwire.CodeInsufficientPrivilege
				detail["error"] = code + " " + msg
			}
		}
		if code == pgwire.CodeInsufficientPrivilege {
			outcome = audit.OutcomeDenied
			if priv := missingPrivilege(msg); priv != "" {
				detail["privilege"] = priv
			}
		}
	}
	addr := ""
	if ss.pg.RemoteAddr != nil {
		addr = ss.pg.RemoteAddr.String()
	}
	ss.e.opts.Audit(context.WithoutCancel(ctx), audit.Event{
		RequestID:  ss.requestID(ctx),
		Principal:  ss.pg.Identity.Principal,
		ClientAddr: addr,
		Action:     "sql.query",
		Resource:   "sql",
		Outcome:    outcome,
		Detail:     detail,
	})
}

// lacksPrivilege finds the privilege an authorization refusal names:
// `principal "bi" lacks SELECT on table ...`.
var lacksPrivilege = regexp.MustCompile(` lacks ([A-Z_]+) on `)

// missingPrivilege returns the privilege a refusal message says is
// missing, or "" when it names none (e.g. a refused function).
func missingPrivilege(msg string) string {
	if m := lacksPrivilege.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// publicError turns an error into what the client sees. DuckDB's messages
// lose the statement text they quote (it is the rewritten query, with file
// paths and filters); with filtered tables, errors raised while running
// are replaced by a generic message, since they may quote values of rows
// or columns the caller may not see.
func (ss *session) publicError(err error, filtered bool) error {
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return err
	}
	var fe *floe.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &pgwire.Error{Code: pgwire.CodeQueryCanceled, Message: "canceling statement due to user request", Err: err}
	}
	var de *duckdb.Error
	if !errors.As(err, &de) {
		ss.e.log.Error("sql: query failed", "session", ss.pg.ID, "err", err)
		return &pgwire.Error{Code: pgwire.CodeInternalError, Message: "internal error", Err: err}
	}
	msg := de.Msg
	if i := strings.Index(msg, "\n\nLINE "); i >= 0 {
		msg = msg[:i]
	} else if i := strings.Index(msg, "\nLINE "); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.TrimSpace(msg)
	code := pgwire.CodeInternalError
	switch de.Type {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		code = pgwire.CodeSyntaxError
	case duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog:
		code = "42703"
		if strings.Contains(msg, "Table with name") {
			code = pgwire.CodeUndefinedTable
		}
	case duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed:
		code = "42P18"
	case duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType:
		code = "42804"
	case duckdb.ErrorTypeConversion:
		code = pgwire.CodeInvalidTextRepresentation
	case duckdb.ErrorTypeOutOfRange:
		code = pgwire.CodeNumericValueOutOfRange
	case duckdb.ErrorTypeDivideByZero:
		code = "22012"
	case duckdb.ErrorTypeInvalidInput:
		code = pgwire.CodeInvalidParameterValue
	case duckdb.ErrorTypeInterrupt:
		return &pgwire.Error{Code: pgwire.CodeQueryCanceled, Message: "canceling statement due to user request", Err: err}
	case duckdb.ErrorTypeOutOfMemory:
		code = "53200"
	case duckdb.ErrorTypePermission:
		code = pgwire.CodeInsufficientPrivilege
		msg = "the query tried to access a file"
	case duckdb.ErrorTypeNotImplemented:
		code = pgwire.CodeFeatureNotSupported
	default:
		ss.e.log.Error("sql: query failed", "session", ss.pg.ID, "err", err)
		return &pgwire.Error{Code: pgwire.CodeInternalError, Message: "internal error", Err: err}
	}
	switch code {
	case pgwire.CodeSyntaxError, "42703", pgwire.CodeUndefinedTable, "42P18", "42804", pgwire.CodeFeatureNotSupported:
		// Planning errors: about the statement, not the data.
	default:
		if filtered {
			msg = filteredWithheld
		}
	}
	return &pgwire.Error{Code: code, Message: msg, Err: err}
}

// firstWord returns the first keyword of a statement, skipping comments.
func firstWord(sql string) string {
	s := skipSpace(sql)
	end := 0
	for end < len(s) && (s[end] == '_' || s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z') {
		end++
	}
	return s[:end]
}

// skipSpace drops leading white space and comments.
func skipSpace(s string) string {
	for {
		t := strings.TrimLeft(s, " \t\r\n\f")
		switch {
		case strings.HasPrefix(t, "--"):
			if i := strings.IndexByte(t, '\n'); i >= 0 {
				s = t[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(t, "/*"):
			if i := strings.Index(t, "*/"); i >= 0 {
				s = t[i+2:]
				continue
			}
			return ""
		}
		return t
	}
}

// unmarshalTree decodes a syntax tree keeping numbers exact (DuckDB's
// locations are unsigned 64-bit).
func unmarshalTree(b []byte, v *node) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
