package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Row-level DML (INSERT, DELETE, UPDATE, MERGE INTO) commits one Iceberg
// snapshot per statement, by copy-on-write:
//
//  1. The statement becomes one SELECT (the "change query") over the
//     target table's data files, read with each row's file and position,
//     and over its source tables, which go through the same analysis and
//     policy views as any query. It yields one row per changed target row:
//     its file and position, whether it is deleted ('D') or replaced
//     ('U'), the new values, and one row per inserted row ('I').
//  2. The changes land in a temporary DuckDB table; a target row changed
//     twice (MERGE or UPDATE ... FROM joining it to several source rows) is
//     an error.
//  3. Each data file with a changed row is rewritten without its deleted
//     and replaced rows, and the new rows are added, as new Parquet files
//     written through the lake's FileIO (so encrypted when the store
//     encrypts), split by the partition spec.
//  4. One overwrite commit replaces the rewritten files with the new ones
//     (an append for rows only inserted). The commit requires the snapshot
//     the statement read; iceberg-go's serializable validation rejects it
//     if a concurrent commit added or removed files since, and the whole
//     statement is then planned and run again on the new snapshot, up to
//     dmlAttempts times.
//
// INSERT skips the temporary table: its rows stream straight into new data
// files, which are appended (concurrent appends do not conflict).

// dmlAttempts bounds how often a statement runs when concurrent commits
// keep winning.
const dmlAttempts = 8

// dmlStmt is a prepared INSERT, DELETE, UPDATE or MERGE statement.
type dmlStmt struct {
	ss        *session
	text      string
	d         *dmlParsed
	paramOIDs []uint32
	params    []uint32
}

// prepareDML parses and plans a data-changing statement once, to check it
// and learn its parameter types.
func (ss *session) prepareDML(ctx context.Context, sql string, paramOIDs []uint32) (*dmlStmt, error) {
	d, err := parseDML(sql)
	if err != nil {
		return nil, err
	}
	st := &dmlStmt{ss: ss, text: sql, d: d, paramOIDs: paramOIDs}
	pl, err := st.plan(ctx)
	if err != nil {
		return nil, err
	}
	defer pl.release()
	ds, err := ss.conn.PrepareContext(ctx, pl.query)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	if st.params, _, _, err = describe(ds.(*duckdb.Stmt), paramOIDs); err != nil {
		return nil, err
	}
	return st, nil
}

// Params implements pgwire.Statement.
func (st *dmlStmt) Params() []uint32 { return st.params }

// Columns implements pgwire.Statement: DML returns no rows.
func (st *dmlStmt) Columns() []pgwire.Column { return nil }

// Close implements pgwire.Statement.
func (st *dmlStmt) Close() error { return nil }

// Execute implements pgwire.Statement: it runs the statement and commits
// its snapshot, again on the table's new state when a concurrent commit
// got in first.
func (st *dmlStmt) Execute(ctx context.Context, args []any) (pgwire.Result, error) {
	ss := st.ss
	switch ss.pg.TxStatus() {
	case pgwire.TxFailed:
		return nil, errTxFailed
	case pgwire.TxInBlock:
		return st.stage(ctx, args)
	}
	nargs := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nargs[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var (
		out *dmlOutcome
		err error
	)
	for attempt := 1; ; attempt++ {
		out, err = st.run(ctx, nargs)
		if err == nil || !retryableCommit(err) {
			break
		}
		if attempt >= dmlAttempts {
			err = &pgwire.Error{Code: pgwire.CodeSerializationFailure,
				Message: fmt.Sprintf("could not commit the %s: concurrent changes to the table won %d times; try again", st.d.kind, attempt), Err: err}
			break
		}
		ss.e.log.DebugContext(ctx, "sql: DML lost a commit race; running it again", "session", ss.pg.ID, "attempt", attempt, "err", err)
		if perr := lake.Pause(ctx, time.Duration(attempt*attempt)*5*time.Millisecond); perr != nil {
			err = perr
			break
		}
	}
	if err != nil {
		return nil, st.failed(ctx, out, err)
	}
	ss.auditDML(ctx, st, out.tables, out.target, out.rows, out.snapshot, nil)
	return &pgwire.StaticResult{CommandTag: st.tag(out.rows)}, nil
}

// failed audits a statement that failed (with what it had found out, if
// anything) and returns the error the client is shown.
func (st *dmlStmt) failed(ctx context.Context, out *dmlOutcome, err error) error {
	ss := st.ss
	if out == nil {
		ss.auditDML(ctx, st, nil, "", -1, 0, err)
		return ss.publicError(err, false)
	}
	ss.auditDML(ctx, st, out.tables, out.target, -1, 0, err)
	return ss.publicError(err, out.filtered)
}

// stage runs the statement inside a transaction block, once: its commit
// is staged in the block and reaches the catalog at COMMIT (see txn.go).
func (st *dmlStmt) stage(ctx context.Context, args []any) (pgwire.Result, error) {
	ss := st.ss
	if ss.txn == nil {
		ss.txn = newTxn(ss)
	}
	nargs := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nargs[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	out, err := st.run(ctx, nargs)
	if err != nil {
		return nil, st.failed(ctx, out, err)
	}
	ss.auditDML(ctx, st, out.tables, out.target, out.rows, 0, nil)
	return &pgwire.StaticResult{CommandTag: st.tag(out.rows)}, nil
}

// tag is the command tag of the statement having changed rows rows.
func (st *dmlStmt) tag(rows int64) string {
	if st.d.kind == dmlInsert {
		return fmt.Sprintf("INSERT 0 %d", rows)
	}
	return fmt.Sprintf("%s %d", st.d.kind, rows)
}

// retryableCommit reports whether a statement failed because a concurrent
// commit changed the table first (nothing was committed).
func retryableCommit(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged)
}

// dmlOutcome is what one run of a statement did.
type dmlOutcome struct {
	target   string   // warehouse.namespace.table written
	tables   []string // tables read
	filtered bool     // a data filter applied to a table read
	rows     int64    // rows inserted, deleted, updated or merged
	snapshot int64    // the committed snapshot; 0 when nothing changed
}

// dmlPlan is a statement planned against the target's current snapshot.
type dmlPlan struct {
	tbl      *table.Table
	wh       string
	id       catalog.Ident
	cols     []column
	files    map[string]scanFile // by the path DuckDB reads them at
	scan     *targetScan
	query    string // the change query (INSERT: the rows to append)
	tables   []string
	filtered bool
	pins     *pinSet
}

func (pl *dmlPlan) release() {
	if pl != nil {
		pl.pins.release()
	}
}

// run plans and runs the statement once.
func (st *dmlStmt) run(ctx context.Context, args []driver.NamedValue) (*dmlOutcome, error) {
	pl, err := st.plan(ctx)
	if err != nil {
		return nil, err
	}
	defer pl.release()
	out := &dmlOutcome{target: pl.wh + "." + pl.id.String(), tables: pl.tables, filtered: pl.filtered}
	if st.d.kind == dmlInsert {
		err = st.runInsert(ctx, pl, args, out)
	} else {
		err = st.runChange(ctx, pl, args, out)
	}
	return out, err
}

// snapshotProps are the summary properties of a DML snapshot.
func (st *dmlStmt) snapshotProps() iceberg.Properties {
	return iceberg.Properties{"floe.sql.statement": st.d.kind.String(), "floe.sql.principal": st.ss.pg.Identity.Principal}
}

// runInsert streams the rows of an INSERT into new data files and appends
// them.
func (st *dmlStmt) runInsert(ctx context.Context, pl *dmlPlan, args []driver.NamedValue, out *dmlOutcome) error {
	asc, err := arrowSchemaOf(pl.tbl)
	if err != nil {
		return err
	}
	files, n, err := st.writeRows(ctx, pl, asc, pl.query, args)
	if err != nil {
		return err
	}
	out.rows = n
	if len(files) == 0 {
		return nil
	}
	tbl, err := lake.AppendFiles(ctx, pl.tbl, files, st.snapshotProps())
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, files)
			// AppendFiles retried already: do not run the INSERT again.
			return &pgwire.Error{Code: pgwire.CodeSerializationFailure, Message: "could not append: concurrent changes to the table kept winning; try again", Err: err}
		}
		return err
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		out.snapshot = s.SnapshotID
	}
	return nil
}

// writeRows runs query on the session's DuckDB and writes its rows, whose
// columns are asc's, into new data files of the target table; n counts the
// rows. A row the table's schema refuses (a NULL in a required column) is
// the error returned.
func (st *dmlStmt) writeRows(ctx context.Context, pl *dmlPlan, asc *arrow.Schema, query string, args []driver.NamedValue, opts ...table.WriteRecordOption) (files []iceberg.DataFile, n int64, err error) {
	rows, err := st.ss.conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, 0, err
	}
	rdr := newRowReader(asc, rows)
	files, err = lake.WriteDataFiles(ctx, pl.tbl, rdr, opts...)
	_ = rows.Close()
	rdr.Release()
	if err != nil {
		if rdr.err != nil {
			return nil, 0, rdr.err
		}
		return nil, 0, err
	}
	return files, rdr.n, nil
}

// runChange runs a DELETE, UPDATE or MERGE: the changes into a temporary
// table, then the rewrite of the files they touch, then the commit.
func (st *dmlStmt) runChange(ctx context.Context, pl *dmlPlan, args []driver.NamedValue, out *dmlOutcome) error {
	ss := st.ss
	ss.dmlSeq++
	chg := fmt.Sprintf("__floe_chg_%d", ss.dmlSeq)
	if _, err := ss.conn.ExecContext(ctx, "CREATE TEMP TABLE "+chg+" AS "+pl.query, args); err != nil {
		return err
	}
	defer func() {
		if _, err := ss.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+chg, nil); err != nil {
			ss.e.log.Error("sql: cannot drop a DML change table", "session", ss.pg.ID, "err", err)
		}
	}()
	dup, err := ss.count(ctx, "SELECT count(*) FROM (SELECT 1 FROM "+chg+" WHERE __floe_f IS NOT NULL GROUP BY __floe_f, __floe_p HAVING count(*) > 1)")
	if err != nil {
		return err
	}
	if dup > 0 {
		return &pgwire.Error{Code: "21000", Message: fmt.Sprintf("%s would change the same target row more than once: %d target rows match several source rows", st.d.kind, dup),
			Hint: "Ensure that no more than one source row matches any one target row."}
	}
	if out.rows, err = ss.count(ctx, "SELECT count(*) FROM "+chg); err != nil || out.rows == 0 {
		return err
	}
	// The files with deleted or replaced rows.
	var affected []scanFile
	rows, err := ss.conn.QueryContext(ctx, "SELECT DISTINCT __floe_f FROM "+chg+" WHERE __floe_f IS NOT NULL ORDER BY 1", nil)
	if err != nil {
		return err
	}
	buf := make([]driver.Value, 1)
	for {
		if err := rows.Next(buf); err != nil {
			_ = rows.Close()
			if !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
		path, _ := buf[0].(string)
		f, ok := pl.files[path]
		if !ok {
			_ = rows.Close()
			return fmt.Errorf("engine: the change of %s names file %q that is not in the table", out.target, path)
		}
		affected = append(affected, f)
	}
	// On a v3 table in merge-on-read mode, deletion vectors instead.
	if mergeOnRead(pl.tbl, st.d.kind) {
		return st.commitRowDelta(ctx, pl, chg, affected, out)
	}
	// The new content: the kept rows of those files, and the new rows.
	// On a v3 table the rows keep their lineage (the spec asks it of
	// writers that move rows): a kept row its _row_id and
	// _last_updated_sequence_number, an updated row its _row_id (the
	// sequence number is the new snapshot's, by inheritance), a new row
	// none (its file's first_row_id numbers it).
	lineage := pl.tbl.Metadata().Version() >= 3
	kept, err := pl.scan.sqlWith(affected, lineage)
	if err != nil {
		return err
	}
	names := make([]string, len(pl.cols))
	for i, c := range pl.cols {
		names[i] = quoteIdent(c.name)
	}
	list := strings.Join(names, ", ")
	content := "SELECT " + list + " FROM (" + kept + ") AS __floe_x ANTI JOIN " + chg +
		" AS __floe_c ON __floe_c.__floe_f = __floe_x.__floe_f AND __floe_c.__floe_p = __floe_x.__floe_p" +
		" UNION ALL SELECT " + list + " FROM " + chg + " WHERE __floe_k <> 'D'"
	asc, err := arrowSchemaOf(pl.tbl)
	if err != nil {
		return err
	}
	var writeOpts []table.WriteRecordOption
	if lineage {
		content = lineageContent(pl, kept, chg, true)
		if asc, writeOpts, err = lineageWrite(pl); err != nil {
			return err
		}
	}
	files, _, err := st.writeRows(ctx, pl, asc, content, nil, writeOpts...)
	if err != nil {
		return err
	}
	removed := make([]iceberg.DataFile, len(affected))
	var removedDVs []iceberg.DataFile // the deletion vectors of removed files go with them
	for i, f := range affected {
		removed[i] = f.task.File
		removedDVs = append(removedDVs, f.task.DeletionVectorFiles...)
	}
	// On a v3 table the new files' rows get row ids from the table's
	// next-row-id (the commit is against pl.tbl's metadata, or fails).
	if files, err = lake.AssignFirstRowIDs(pl.tbl.Metadata(), files); err != nil {
		lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, files)
		return err
	}
	txn := pl.tbl.NewTransaction()
	if len(removed) == 0 {
		err = txn.AddDataFiles(ctx, files, st.snapshotProps(), table.WithoutDuplicateCheck())
	} else if len(removedDVs) == 0 {
		err = txn.ReplaceDataFilesWithDataFiles(ctx, removed, files, st.snapshotProps())
	} else {
		err = txn.ReplaceFiles(ctx, removed, files, removedDVs, st.snapshotProps())
	}
	if err != nil {
		lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, files)
		return err
	}
	return commitDML(ctx, pl, txn, files, out)
}

// commitDML commits a change's transaction and records its snapshot in
// out. After a clean conflict nothing refers to the files the change wrote
// (written), so they are removed; after any other failure the commit's
// outcome is unknown, and they are left for orphan cleanup.
func commitDML(ctx context.Context, pl *dmlPlan, txn *table.Transaction, written []iceberg.DataFile, out *dmlOutcome) error {
	tbl, err := txn.Commit(ctx)
	if err != nil {
		if retryableCommit(err) {
			lake.RemoveFiles(context.WithoutCancel(ctx), pl.tbl, written)
		}
		return err
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		out.snapshot = s.SnapshotID
	}
	return nil
}

// lineageContent renders the rows a change writes on a v3 table with
// their lineage columns: the changed (updated or inserted) rows of chg,
// an updated row with the _row_id of the row it replaces (kept: the
// target's affected files with __floe_rid and __floe_seq) and a NULL
// sequence number, which the new snapshot's fills in; with withKept, the
// unchanged rows of kept too, with their lineage as it was.
func lineageContent(pl *dmlPlan, kept, chg string, withKept bool) string {
	names := make([]string, len(pl.cols))
	cl := make([]string, len(pl.cols))
	for i, c := range pl.cols {
		names[i] = quoteIdent(c.name)
		cl[i] = "__floe_c." + quoteIdent(c.name)
	}
	var b strings.Builder
	b.WriteString("WITH __floe_x AS MATERIALIZED (" + kept + ") ")
	if withKept {
		b.WriteString("SELECT " + strings.Join(names, ", ") + ", __floe_rid AS " + quoteIdent(iceberg.RowIDColumnName) +
			", __floe_seq AS " + quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName) + " FROM __floe_x ANTI JOIN " + chg +
			" AS __floe_c ON __floe_c.__floe_f = __floe_x.__floe_f AND __floe_c.__floe_p = __floe_x.__floe_p UNION ALL ")
	}
	b.WriteString("SELECT " + strings.Join(cl, ", ") + ", __floe_x.__floe_rid AS " + quoteIdent(iceberg.RowIDColumnName) +
		", CAST(NULL AS BIGINT) AS " + quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName) + " FROM " + chg +
		" AS __floe_c LEFT JOIN __floe_x ON __floe_x.__floe_f = __floe_c.__floe_f AND __floe_x.__floe_p = __floe_c.__floe_p WHERE __floe_c.__floe_k <> 'D'")
	return b.String()
}

// lineageWrite returns the Arrow schema and writer options of data files
// of a v3 table that store the row lineage columns.
func lineageWrite(pl *dmlPlan) (*arrow.Schema, []table.WriteRecordOption, error) {
	fileSchema := iceberg.SchemaWithRowLineage(pl.tbl.Schema())
	asc, err := table.SchemaToArrowSchemaWithOptions(fileSchema, table.ArrowSchemaOptions{IncludeFieldIDs: true,
		TableProperties: pl.tbl.Properties()})
	if err != nil {
		return nil, nil, err
	}
	return asc, []table.WriteRecordOption{table.WithPreserveRowLineage(fileSchema)}, nil
}

// count runs a query of one integer.
func (ss *session) count(ctx context.Context, q string) (int64, error) {
	rows, err := ss.conn.QueryContext(ctx, q, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dst := make([]driver.Value, 1)
	if err := rows.Next(dst); err != nil {
		return 0, err
	}
	n, _ := dst[0].(int64)
	return n, nil
}

// plan resolves the target and the source tables and renders the change
// query.
func (st *dmlStmt) plan(ctx context.Context) (*dmlPlan, error) {
	ss, e, d := st.ss, st.ss.e, st.d
	path, err := st.targetPath(ctx)
	if err != nil {
		return nil, err
	}
	wh, id := e.identOf(path)
	if err := id.Namespace.Validate(); err != nil {
		return nil, &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", strings.Join(path, "."))}
	}
	if err := ss.authorizeWrite(ctx, wh, id, d.kind); err != nil {
		return nil, err
	}
	tbl, err := ss.loadTable(ctx, wh, id)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", strings.Join(path, ".")), Err: err}
		}
		return nil, err
	}
	cols, err := columnsOf(tbl.Schema())
	if err != nil {
		return nil, err
	}
	pl := &dmlPlan{tbl: tbl, wh: wh, id: id, cols: cols, pins: &pinSet{c: e.files}}
	ok := false
	defer func() {
		if !ok {
			pl.release()
		}
	}()
	if d.kind != dmlInsert {
		var tasks []table.FileScanTask
		if snap := tbl.CurrentSnapshot(); snap != nil {
			if tasks, err = e.planFiles(ctx, tbl, snap.SnapshotID, nil); err != nil {
				return nil, err
			}
		}
		if pl.scan, err = e.newTargetScan(ctx, tbl.Schema(), cols, tasks, pl.pins); err != nil {
			return nil, err
		}
		pl.files = map[string]scanFile{}
		for _, f := range pl.scan.files {
			pl.files[f.path] = f
		}
	}
	text, targetAt, err := st.changeSQL(pl)
	if err != nil {
		return nil, err
	}
	query, tree, err := st.rewrite(ctx, pl, text, targetAt)
	if err != nil {
		return nil, err
	}
	if d.kind == dmlInsert {
		if query, err = st.insertSQL(ctx, pl, query, tree); err != nil {
			return nil, err
		}
	}
	pl.query = query
	ok = true
	return pl, nil
}

// targetPath returns the target's name parts as a query would see them.
func (st *dmlStmt) targetPath(ctx context.Context) ([]string, error) {
	stmts, err := st.ss.serialize(ctx, "SELECT * FROM "+st.d.target)
	if err != nil || len(stmts) != 1 {
		return nil, syntaxError("invalid table name %s", st.d.target)
	}
	a, err := analyze(stmts[0], st.ss.temps)
	if err != nil {
		return nil, err
	}
	if a.system || len(a.refs) != 1 {
		return nil, refused("%s may not be changed through the SQL endpoint", st.d.target)
	}
	return a.refs[0].path, nil
}

// authorizeWrite checks that the caller may change the table: a token that
// may write (not catalog:read), MODIFY on the table, and for statements
// that read the target (all but INSERT) SELECT on it. A caller whose
// SELECT on the table carries a data filter may not change it at all: the
// statement could change or add rows the filter hides from it.
func (ss *session) authorizeWrite(ctx context.Context, wh string, id catalog.Ident, kind dmlKind) error {
	if ss.readOnly {
		return floe.E(floe.Forbidden, "privilege", "the token is read-only (scope catalog:read): it may read but not write table %s", id)
	}
	if ss.unrestricted || ss.createdHere(wh, id) {
		return nil
	}
	pol, err := ss.e.opts.Policies.Policy(ctx)
	if err != nil {
		return floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
	}
	s := authz.Table(wh, id)
	if err := pol.Check(ss.sub, authz.Modify, s); err != nil {
		return err
	}
	filters, err := pol.ReadFilters(ss.sub, s)
	if err != nil {
		if kind == dmlInsert && floe.KindOf(err) == floe.Forbidden {
			return nil // INSERT does not read the table
		}
		return err
	}
	if filters != nil {
		return floe.E(floe.Forbidden, "privilege",
			"%s may read %s only through a data filter (row filter or column restriction), so it may not %s it: the statement could change rows the filter hides",
			ss.sub, s, kind)
	}
	return nil
}

// changeSQL renders the statement as one SELECT over the target (named as
// written, at byte offset targetAt; -1 for INSERT, which does not read it)
// and the sources.
func (st *dmlStmt) changeSQL(pl *dmlPlan) (text string, targetAt int, err error) {
	d := st.d
	var b strings.Builder
	if d.kind == dmlInsert {
		b.WriteString("SELECT * FROM (")
		if d.rows == nil {
			b.WriteString(d.source)
		} else {
			targets, err := st.insertTargets(pl, len(d.rows[0]))
			if err != nil {
				return "", 0, err
			}
			b.WriteString("VALUES ")
			for i, row := range d.rows {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(")
				for j, v := range row {
					if j > 0 {
						b.WriteString(", ")
					}
					b.WriteString("CAST((" + v + "\n) AS " + pl.cols[targets[j]].typ + ")")
				}
				b.WriteString(")")
			}
		}
		b.WriteString("\n) AS __floe_src")
		return b.String(), -1, nil
	}
	alias := d.alias
	if alias == "" {
		alias = lastNamePart(d.target)
	}
	a := quoteIdent(alias)
	colIndex, err := st.columnIndex(pl)
	if err != nil {
		return "", 0, err
	}
	keep := func(c column) string { return a + "." + quoteIdent(c.name) }
	cast := func(expr string, c column) string { return "CAST((" + expr + "\n) AS " + c.typ + ")" }
	null := func(c column) string { return "CAST(NULL AS " + c.typ + ")" }
	writeValues := func(val func(i int, c column) string) {
		for i, c := range pl.cols {
			b.WriteString(", ")
			b.WriteString(val(i, c))
			b.WriteString(" AS ")
			b.WriteString(quoteIdent(c.name))
		}
	}
	writeTarget := func() {
		b.WriteString(" FROM ")
		targetAt = b.Len()
		b.WriteString(d.target)
		b.WriteString(" AS ")
		b.WriteString(a)
	}
	switch d.kind {
	case dmlDelete:
		b.WriteString("SELECT ")
		if d.from != "" {
			b.WriteString("DISTINCT ")
		}
		b.WriteString(a + ".__floe_f AS __floe_f, " + a + ".__floe_p AS __floe_p, 'D' AS __floe_k")
		writeValues(func(_ int, c column) string { return null(c) })
		writeTarget()
		if d.from != "" {
			b.WriteString(", " + d.from + "\n")
		}
		if d.cond != "" {
			b.WriteString(" WHERE (" + d.cond + "\n)")
		}
	case dmlUpdate:
		set := map[int]string{}
		for _, as := range d.sets {
			i, err := colIndex(as.col)
			if err != nil {
				return "", 0, err
			}
			set[i] = as.expr
		}
		b.WriteString("SELECT " + a + ".__floe_f AS __floe_f, " + a + ".__floe_p AS __floe_p, 'U' AS __floe_k")
		writeValues(func(i int, c column) string {
			if e, ok := set[i]; ok {
				return cast(e, c)
			}
			return keep(c)
		})
		writeTarget()
		if d.from != "" {
			b.WriteString(", " + d.from + "\n")
		}
		if d.cond != "" {
			b.WriteString(" WHERE (" + d.cond + "\n)")
		}
	case dmlMerge:
		salias := d.sourceAlias
		if salias == "" {
			if strings.HasPrefix(d.source, "(") {
				return "", 0, syntaxError("a subquery in MERGE ... USING needs an alias")
			}
			salias = lastNamePart(d.source)
		}
		sa := quoteIdent(salias)
		// The action of each row: the number of the first WHEN clause that
		// applies to it.
		var branch [4][]string
		for i, c := range d.clauses {
			cond := "true"
			if c.cond != "" {
				cond = "(" + c.cond + "\n)"
			}
			branch[c.match] = append(branch[c.match], fmt.Sprintf("WHEN %s THEN %d", cond, i+1))
		}
		var act strings.Builder
		act.WriteString("(CASE")
		tests := [...]string{
			whenMatched:         a + ".__floe_f IS NOT NULL AND " + sa + ".__floe_s IS NOT NULL",
			whenNotMatched:      a + ".__floe_f IS NULL",
			whenNotMatchedBySrc: sa + ".__floe_s IS NULL",
		}
		for m := whenMatched; m <= whenNotMatchedBySrc; m++ {
			if len(branch[m]) > 0 {
				fmt.Fprintf(&act, " WHEN %s THEN (CASE %s END)", tests[m], strings.Join(branch[m], " "))
			}
		}
		act.WriteString(" END)")
		kind := "CASE " + act.String()
		type clauseValues map[int]string // column index -> value
		values := make([]clauseValues, len(d.clauses))
		for i, c := range d.clauses {
			letter := map[mergeAction]string{actUpdate: "'U'", actDelete: "'D'", actInsert: "'I'", actNothing: "NULL"}[c.action]
			kind += fmt.Sprintf(" WHEN %d THEN %s", i+1, letter)
			values[i] = clauseValues{}
			switch c.action {
			case actUpdate:
				for _, as := range c.sets {
					k, err := colIndex(as.col)
					if err != nil {
						return "", 0, err
					}
					values[i][k] = cast(as.expr, pl.cols[k])
				}
				for k, col := range pl.cols {
					if _, ok := values[i][k]; !ok {
						values[i][k] = keep(col)
					}
				}
			case actInsert:
				targets := c.cols
				if targets == nil {
					if len(c.values) > len(pl.cols) {
						return "", 0, syntaxError("INSERT has more expressions than target columns")
					}
					for _, col := range pl.cols[:len(c.values)] {
						targets = append(targets, col.name)
					}
				}
				for j, name := range targets {
					k, err := colIndex(name)
					if err != nil {
						return "", 0, err
					}
					if _, dup := values[i][k]; dup {
						return "", 0, syntaxError("column %q specified more than once", name)
					}
					values[i][k] = cast(c.values[j], pl.cols[k])
				}
			}
		}
		kind += " END"
		b.WriteString("SELECT * FROM (SELECT " + a + ".__floe_f AS __floe_f, " + a + ".__floe_p AS __floe_p, " + kind + " AS __floe_k")
		writeValues(func(k int, c column) string {
			var cases []string
			for i := range d.clauses {
				if v, ok := values[i][k]; ok {
					cases = append(cases, fmt.Sprintf("WHEN %d THEN %s", i+1, v))
				}
			}
			if len(cases) == 0 {
				return null(c)
			}
			return "CAST(CASE " + act.String() + " " + strings.Join(cases, " ") + " END AS " + c.typ + ")"
		})
		writeTarget()
		var nmt, nms bool
		for _, c := range d.clauses {
			nmt = nmt || c.match == whenNotMatched
			nms = nms || c.match == whenNotMatchedBySrc
		}
		switch {
		case nmt && nms:
			b.WriteString(" FULL JOIN ")
		case nmt:
			b.WriteString(" RIGHT JOIN ")
		case nms:
			b.WriteString(" LEFT JOIN ")
		default:
			b.WriteString(" JOIN ")
		}
		b.WriteString("(SELECT *, true AS __floe_s FROM ")
		b.WriteString(d.source)
		if strings.HasPrefix(d.source, "(") {
			b.WriteString(" AS __floe_q")
		}
		b.WriteString("\n) AS " + sa + " ON (" + d.cond + "\n)) AS __floe_m WHERE __floe_k IS NOT NULL")
	}
	return b.String(), targetAt, nil
}

// columnIndex returns a lookup of target columns by name: exact, else the
// one column whose name matches ignoring case.
func (st *dmlStmt) columnIndex(pl *dmlPlan) (func(string) (int, error), error) {
	return func(name string) (int, error) {
		for i, c := range pl.cols {
			if c.name == name {
				return i, nil
			}
		}
		found := -1
		for i, c := range pl.cols {
			if strings.EqualFold(c.name, name) {
				if found >= 0 {
					return 0, &pgwire.Error{Code: "42702", Message: fmt.Sprintf("column name %q is ambiguous in table %s", name, pl.id)}
				}
				found = i
			}
		}
		if found < 0 {
			return 0, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %s does not exist", name, pl.id)}
		}
		return found, nil
	}, nil
}

// lastNamePart returns the last part of a dotted name as an identifier
// (unquoted; unquoted parts folded to lower case).
func lastNamePart(name string) string {
	toks, err := lexSQL(name)
	if err != nil || len(toks) == 0 {
		return name
	}
	t := toks[len(toks)-1]
	if t.kind == tokIdent {
		return strings.ReplaceAll(t.text[1:len(t.text)-1], `""`, `"`)
	}
	return strings.ToLower(t.text)
}

// rewrite checks the change query like a query and replaces its table
// references: the target (the reference at byte offset targetAt) by the
// scan of its files with row positions, every other table by its policy
// view. It returns the query to run.
func (st *dmlStmt) rewrite(ctx context.Context, pl *dmlPlan, text string, targetAt int) (string, node, error) {
	stmt, err := st.rewriteTree(ctx, pl, text, targetAt)
	if err != nil {
		return "", nil, err
	}
	query, err := st.ss.deserialize(ctx, stmt)
	return query, stmt, err
}

func (st *dmlStmt) rewriteTree(ctx context.Context, pl *dmlPlan, text string, targetAt int) (node, error) {
	ss := st.ss
	stmt, err := ss.parseOne(ctx, text)
	if err != nil {
		return nil, err
	}
	at := strconv.Itoa(targetAt)
	skip := ""
	if targetAt >= 0 {
		skip = at
	}
	a, err := ss.analyzeViews(ctx, stmt, skip)
	if err != nil {
		return nil, err
	}
	if a.system {
		if err := ss.syncCatalog(ctx); err != nil {
			return nil, err
		}
	}
	seen := false
	for _, ref := range a.refs {
		if targetAt >= 0 && fmt.Sprint(ref.n["query_location"]) == at && !seen {
			seen = true
			if ref.at != nil {
				return nil, unsupported("a data-changing statement cannot name a table AT a snapshot")
			}
			scan, err := pl.scan.sql(pl.scan.files)
			if err != nil {
				return nil, err
			}
			if err := ss.replace(ctx, ref, scan); err != nil {
				return nil, err
			}
			continue
		}
		r, err := ss.e.resolve(ctx, ss, ref, pl.pins)
		if err != nil {
			return nil, err
		}
		pl.tables = append(pl.tables, r.name())
		pl.filtered = pl.filtered || r.filtered
		if err := ss.replace(ctx, ref, r.sql); err != nil {
			return nil, err
		}
	}
	if targetAt >= 0 && !seen {
		return nil, fmt.Errorf("engine: the target of the %s was not found in its change query", st.d.kind)
	}
	for _, ref := range a.patched {
		if err := ss.replace(ctx, ref, systemPatch(ref.path)); err != nil {
			return nil, err
		}
	}
	if targetAt >= 0 {
		pl.tables = append(pl.tables, pl.wh+"."+pl.id.String())
	}
	slices.Sort(pl.tables)
	pl.tables = slices.Compact(pl.tables)
	return stmt, nil
}

// insertSQL wraps the (rewritten) source query of an INSERT: its columns,
// by position, cast to the types of the target columns they go to; the
// other columns NULL.
func (st *dmlStmt) insertSQL(ctx context.Context, pl *dmlPlan, source string, tree node) (string, error) {
	n, err := st.sourceColumns(ctx, pl, source, tree)
	if err != nil {
		return "", err
	}
	targets, err := st.insertTargets(pl, n)
	if err != nil {
		return "", err
	}
	from := map[int]int{} // target column -> source column
	for j, k := range targets {
		from[k] = j
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range pl.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if j, ok := from[i]; ok {
			fmt.Fprintf(&b, "CAST(__floe_in.__floe_c%d AS %s)", j, c.typ)
		} else {
			fmt.Fprintf(&b, "CAST(NULL AS %s)", c.typ)
		}
		b.WriteString(" AS " + quoteIdent(c.name))
	}
	b.WriteString(" FROM (" + source + ") AS __floe_in(")
	for j := range n {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "__floe_c%d", j)
	}
	b.WriteString(")")
	return b.String(), nil
}

// sourceColumns returns the number of columns of an INSERT's source
// (source is "SELECT * FROM (<the source>) AS __floe_src", tree its
// syntax tree). DuckDB knows it, except when a parameter's type is open
// (it then reports one column); the select list then tells, unless it has
// a star, and the number of target columns is assumed: too few source
// columns then fail, too many go unnoticed.
func (st *dmlStmt) sourceColumns(ctx context.Context, pl *dmlPlan, source string, tree node) (int, error) {
	if st.d.rows != nil {
		return len(st.d.rows[0]), nil
	}
	ds, err := st.ss.conn.PrepareContext(ctx, source)
	if err != nil {
		return 0, err
	}
	defer ds.Close()
	dst := ds.(*duckdb.Stmt)
	if dst.NumInput() == 0 {
		return dst.ColumnCount()
	}
	inner, _ := tree["node"].(node)
	from, _ := inner["from_table"].(node)
	sub, _ := from["subquery"].(node)
	if n, ok := selectWidth(sub["node"]); ok {
		return n, nil
	}
	if st.d.cols != nil {
		return len(st.d.cols), nil
	}
	return len(pl.cols), nil
}

// selectWidth counts the columns of a query node by its select list; ok is
// false when a star or COLUMNS expression hides the count.
func selectWidth(v any) (int, bool) {
	n, _ := v.(node)
	switch n["type"] {
	case "SELECT_NODE":
		list, _ := n["select_list"].([]any)
		for _, e := range list {
			en, _ := e.(node)
			if en == nil || en["class"] == "STAR" || en["class"] == "COLUMNS" || en["type"] == "STAR" {
				return 0, false
			}
		}
		return len(list), len(list) > 0
	case "SET_OPERATION_NODE":
		if l, ok := selectWidth(n["left"]); ok {
			return l, true
		}
		if children, ok := n["children"].([]any); ok && len(children) > 0 {
			return selectWidth(children[0])
		}
	}
	return 0, false
}

// insertTargets returns the indexes of the target columns of the n
// columns of an INSERT's source: those listed, or the first n.
func (st *dmlStmt) insertTargets(pl *dmlPlan, n int) ([]int, error) {
	names := st.d.cols
	if names == nil {
		if n > len(pl.cols) {
			return nil, syntaxError("INSERT has more expressions than target columns")
		}
		for _, c := range pl.cols[:n] {
			names = append(names, c.name)
		}
	}
	if n > len(names) {
		return nil, syntaxError("INSERT has more expressions than target columns")
	}
	if n < len(names) {
		return nil, syntaxError("INSERT has more target columns than expressions")
	}
	colIndex, _ := st.columnIndex(pl)
	out := make([]int, len(names))
	seen := map[int]bool{}
	for j, name := range names {
		k, err := colIndex(name)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, syntaxError("column %q specified more than once", name)
		}
		seen[k] = true
		out[j] = k
	}
	return out, nil
}

// auditDML records one data-changing statement: who, the SQL text, the
// tables it read and the table it wrote, the rows it changed (-1: none, it
// failed), the snapshot it committed and the outcome.
func (ss *session) auditDML(ctx context.Context, st *dmlStmt, tables []string, target string, rows, snapshot int64, err error) {
	e := ss.e
	if e.opts.Audit == nil {
		return
	}
	if tables == nil {
		tables = []string{}
	}
	written := []string{}
	if target != "" {
		written = []string{target}
	}
	detail := map[string]any{"sql": st.text, "statement": st.d.kind.String(), "tables": tables, "written": written, "session": ss.pg.ID}
	if err == nil {
		detail["rows"] = rows
		detail["rows_affected"] = rows
		if snapshot != 0 {
			detail["snapshot"] = snapshot
		}
	}
	ss.emitAudit(ctx, detail, err)
}

// scanFile is a data file of the target with the path DuckDB reads it at.
type scanFile struct {
	task table.FileScanTask
	path string
	// dvPaths are the position files made from the data file's deletion
	// vectors (v3 allows one; all are applied).
	dvPaths []string
}

// targetScan renders the rows of the target's data files with each row's
// file (the path DuckDB reads) and position in it, after the file's
// position and equality deletes.
type targetScan struct {
	schema  *iceberg.Schema
	cols    []column
	files   []scanFile
	delPath map[string]string // delete file location -> path
}

// newTargetScan resolves the paths of the files of tasks (pinned in pins).
func (e *Engine) newTargetScan(ctx context.Context, schema *iceberg.Schema, cols []column, tasks []table.FileScanTask, pins *pinSet) (*targetScan, error) {
	ts := &targetScan{schema: schema, cols: cols, delPath: map[string]string{}}
	for _, t := range tasks {
		p, err := e.files.path(ctx, t.File.FilePath(), pins)
		if err != nil {
			return nil, err
		}
		sf := scanFile{task: t, path: p}
		for _, d := range t.DeletionVectorFiles {
			dp, err := e.files.dvPath(ctx, d, t.File.FilePath(), t.File.Count(), pins)
			if err != nil {
				return nil, err
			}
			sf.dvPaths = append(sf.dvPaths, dp)
		}
		ts.files = append(ts.files, sf)
		for _, d := range slices.Concat(t.DeleteFiles, t.EqualityDeleteFiles) {
			if _, ok := ts.delPath[d.FilePath()]; ok {
				continue
			}
			dp, err := e.files.path(ctx, d.FilePath(), pins)
			if err != nil {
				return nil, err
			}
			ts.delPath[d.FilePath()] = dp
		}
	}
	return ts, nil
}

// sql renders the scan of files (a subset of ts.files): columns __floe_f
// (the path), __floe_p (the row's position in the file) and the table's
// columns.
func (ts *targetScan) sql(files []scanFile) (string, error) {
	return ts.sqlWith(files, false)
}

// sqlWith is sql, with each row's _row_id and _last_updated_sequence_number
// (as lineage.go defines them) as __floe_rid and __floe_seq when lineage
// is set.
func (ts *targetScan) sqlWith(files []scanFile, lineage bool) (string, error) {
	var b strings.Builder
	if len(files) == 0 {
		b.WriteString("SELECT CAST(NULL AS VARCHAR) AS __floe_f, CAST(NULL AS BIGINT) AS __floe_p")
		for _, c := range ts.cols {
			b.WriteString(", CAST(NULL AS " + c.typ + ") AS " + quoteIdent(c.name))
		}
		if lineage {
			b.WriteString(", CAST(NULL AS BIGINT) AS __floe_rid, CAST(NULL AS BIGINT) AS __floe_seq")
		}
		b.WriteString(" WHERE false")
		return b.String(), nil
	}
	var (
		paths  []string
		posDel []string
		seen   = map[string]bool{}
		hasPos []string // "(location, path)" of data files with position deletes
		eqOf   = map[string][]string{}
		eqFile = map[string]iceberg.DataFile{}
		dvDel  []string
		dvMap  []string
	)
	for _, f := range files {
		paths = append(paths, f.path)
		if len(f.dvPaths) > 0 {
			dvDel = append(dvDel, f.dvPaths...)
			dvMap = append(dvMap, "("+sqlString(f.task.File.FilePath())+", "+sqlString(f.path)+")")
		}
		if len(f.task.DeleteFiles) > 0 {
			hasPos = append(hasPos, "("+sqlString(f.task.File.FilePath())+", "+sqlString(f.path)+")")
		}
		for _, d := range f.task.DeleteFiles {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				posDel = append(posDel, ts.delPath[d.FilePath()])
			}
		}
		for _, d := range f.task.EqualityDeleteFiles {
			eqFile[d.FilePath()] = d
			eqOf[d.FilePath()] = append(eqOf[d.FilePath()], f.path)
		}
	}
	b.WriteString("SELECT d.filename AS __floe_f, d.file_row_number AS __floe_p")
	for _, c := range ts.cols {
		b.WriteString(", d." + quoteIdent(c.name))
	}
	readCols := ts.cols
	if lineage {
		b.WriteString(strings.NewReplacer(`AS "_row_id"`, "AS __floe_rid", `AS "_last_updated_sequence_number"`, "AS __floe_seq").Replace(lineageColumns))
		readCols = append(ts.cols[:len(ts.cols):len(ts.cols)], lineageFileColumns...)
	}
	b.WriteString(" FROM read_parquet(" + sqlList(paths) + ", schema=" + schemaMap(readCols) + ", filename=true, file_row_number=true) AS d")
	if lineage {
		tasks := make([]table.FileScanTask, len(files))
		pathOf := make(map[string]string, len(files))
		for i, f := range files {
			tasks[i] = f.task
			pathOf[f.task.File.FilePath()] = f.path
		}
		appendLineageJoin(&b, tasks, pathOf)
	}
	if len(dvDel) > 0 {
		appendPositionJoin(&b, "dv", dvDel, dvMap)
	}
	err := appendDeleteJoins(&b, ts.schema, posDel, hasPos, eqFile,
		func(loc string) (string, error) { return ts.delPath[loc], nil },
		func(loc string) []string { return eqOf[loc] })
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// arrowSchemaOf is the Arrow schema data files of tbl are written from.
func arrowSchemaOf(tbl *table.Table) (*arrow.Schema, error) {
	return table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
}
