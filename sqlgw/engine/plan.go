package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// resolved is a table reference turned into the SQL of its policy view.
type resolved struct {
	wh       string
	id       catalog.Ident
	uuid     string // the table's UUID
	snapshot int64  // 0: the table has no snapshot
	filtered bool   // a data filter applies
	sql      string
	files    int // data files read
	pruned   int // data files skipped by their statistics
}

// name renders the table as in audit events: warehouse.namespace.table.
func (r *resolved) name() string { return r.wh + "." + r.id.String() }

// identOf turns a reference's name parts into a warehouse and identifier:
// namespace.table in the default warehouse, or warehouse.namespace.table.
// A quoted namespace part with dots ("a.b".t) names a nested namespace.
func (e *Engine) identOf(path []string) (string, catalog.Ident) {
	wh := e.opts.Warehouse
	if len(path) == 3 {
		wh, path = path[0], path[1:]
	}
	return wh, catalog.Ident{Namespace: catalog.Namespace(strings.Split(path[0], ".")), Name: path[1]}
}

// resolve checks the caller's access to a referenced table, plans its
// files at the requested snapshot and returns its view.
func (e *Engine) resolve(ctx context.Context, ss *session, ref *tableRef, pins *pinSet) (_ *resolved, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "sql.resolve_table")
		defer func() { spans.End(span, err) }()
	}
	wh, id := e.identOf(ref.path)
	if err := id.Namespace.Validate(); err != nil {
		return nil, &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", strings.Join(ref.path, "."))}
	}
	var filters []authz.DataFilter
	// A table a definer-rights view reads is read with its owner's rights
	// (views.go), any other with the session's.
	sub, unrestricted := ss.sub, ss.unrestricted && ref.rights == nil
	if ref.rights != nil {
		sub = ref.rights.sub
	}
	if !unrestricted && (ref.rights != nil || !ss.createdHere(wh, id)) {
		pol, err := e.opts.Policies.Policy(ctx)
		if err != nil {
			return nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
		if filters, err = pol.ReadFilters(sub, authz.Table(wh, id)); err != nil {
			if ref.rights != nil {
				return nil, ref.rights.denied(wh, id, err)
			}
			return nil, err
		}
	}
	// A foreign catalog's table is loaded from its remote only now, once
	// the caller may read it, and its files are read from there.
	foreign := e.isForeign(wh)
	tbl, err := ref.tbl, error(nil)
	switch {
	case foreign:
		tbl, err = e.opts.Foreign.LoadTable(ctx, Caller{Subject: ss.sub, TokenID: ss.tokenID}, wh, id)
	case tbl == nil:
		tbl, err = ss.loadTable(ctx, wh, id)
	}
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", strings.Join(ref.path, ".")), Err: err}
		}
		return nil, remoteError(wh, err)
	}
	if foreign {
		if ctx, err = withForeign(ctx, wh, tbl); err != nil {
			return nil, remoteError(wh, err)
		}
		r, err := e.resolveLoaded(ctx, ss, ref, wh, id, tbl, sub, filters, pins)
		if err != nil && floe.KindOf(err) == floe.Internal && !errors.As(err, new(*pgwire.Error)) {
			// The remote's metadata or storage failed to answer.
			err = floe.Wrap(floe.Unavailable, err, "foreign catalog %s: cannot read table %s", wh, id)
		}
		return r, remoteError(wh, err)
	}
	return e.resolveLoaded(ctx, ss, ref, wh, id, tbl, sub, filters, pins)
}

// resolveLoaded is resolve once the table is loaded: it plans the files of
// the snapshot the reference reads and renders its view, with the data
// filters of sub applied.
func (e *Engine) resolveLoaded(ctx context.Context, ss *session, ref *tableRef, wh string, id catalog.Ident, tbl *table.Table,
	sub authz.Subject, filters []authz.DataFilter, pins *pinSet) (*resolved, error) {
	r := &resolved{wh: wh, id: id, uuid: tbl.Metadata().TableUUID().String(), filtered: filters != nil}
	snap, err := e.snapshotOf(ctx, ss, tbl, ref.at)
	if err != nil {
		return nil, err
	}
	var (
		tasks []table.FileScanTask
		size  int64 // bytes of the snapshot's files, when the session keeps its rows
	)
	if snap != nil {
		r.snapshot = snap.SnapshotID
		if tasks, err = e.planFiles(ctx, tbl, snap.SnapshotID, nil); err != nil {
			return nil, err
		}
		all := len(tasks)
		size = ss.tables.keepable(tasks)
		// Pruning is for tables read from their files; a data filter
		// leaves it out rather than reason about columns the caller
		// cannot see.
		if filters == nil && len(ref.prune) > 0 && size == 0 {
			if f := rowFilter(tbl.Schema(), ref.prune); f != nil {
				pruned, err := e.planFiles(ctx, tbl, snap.SnapshotID, f)
				if err == nil {
					tasks = pruned
				} else {
					// An earlier snapshot's schema may not have the column.
					e.log.DebugContext(ctx, "sql: file pruning skipped", "table", id.String(), "err", err)
				}
			}
		}
		r.files, r.pruned = len(tasks), all-len(tasks)
	}
	var base string
	lineage := ref.lineage && tbl.Metadata().Version() >= 3
	switch {
	case lineage:
		base, err = e.lineageSQL(ctx, tbl.Schema(), tasks, pins)
	case size > 0:
		base, err = ss.keptBase(ctx, tbl, r.snapshot, tasks, size, pins)
	default:
		base, err = e.baseSQL(ctx, tbl.Schema(), tasks, pins)
	}
	if err != nil {
		return nil, err
	}
	if r.sql, err = e.policySQL(ctx, ss, sub, wh, id, tbl, base, filters, lineage); err != nil {
		return nil, err
	}
	return r, nil
}

// snapshotOf returns the snapshot a reference reads: the current one, or
// the one its AT clause selects.
func (e *Engine) snapshotOf(ctx context.Context, ss *session, tbl *table.Table, at *atClause) (*table.Snapshot, error) {
	if at == nil {
		return tbl.CurrentSnapshot(), nil
	}
	if at.timestamp == "" {
		s := tbl.SnapshotByID(at.version)
		if s == nil {
			return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: fmt.Sprintf("table %s has no snapshot %d", strings.Join(tbl.Identifier(), "."), at.version)}
		}
		return s, nil
	}
	ms, err := ss.epochMillis(ctx, at.timestamp)
	if err != nil {
		return nil, err
	}
	s := tbl.SnapshotAsOf(ms, true)
	if s == nil {
		return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: fmt.Sprintf("table %s has no snapshot at or before %s", strings.Join(tbl.Identifier(), "."), at.timestamp)}
	}
	return s, nil
}

// planKey identifies the files of one snapshot of one table; snapshots are
// immutable, so a plan never goes stale.
type planKey struct {
	table    string
	snapshot int64
	filter   string // the row filter pruning the files, if any
}

// planFiles lists the data files of a snapshot with their delete files,
// only those that may hold rows matching filter when it is not nil. A
// snapshot that references a file outside the table's location is refused
// (Forbidden, SQLSTATE 42501).
func (e *Engine) planFiles(ctx context.Context, tbl *table.Table, snapshot int64, filter iceberg.BooleanExpression) (_ []table.FileScanTask, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "sql.plan_files")
		defer func() { spans.End(span, err) }()
	}
	key := planKey{table: scopeOf(ctx).key(tbl.Metadata().TableUUID().String()), snapshot: snapshot}
	opts := []table.ScanOption{table.WithSnapshotID(snapshot)}
	if filter != nil {
		key.filter = filter.String()
		opts = append(opts, table.WithRowFilter(filter), table.WithCaseSensitive(false))
	}
	if tasks, ok := e.plans.Get(key); ok {
		return tasks, nil
	}
	if err := lake.CheckSnapshot(tbl, tbl.SnapshotByID(snapshot)); err != nil {
		return nil, err
	}
	if filter == nil {
		tasks, manifests, ok, err := e.appendPlan(ctx, tbl, snapshot)
		if err != nil {
			return nil, err
		}
		if ok {
			e.planned.appended.Add(1)
			e.plans.Add(key, tasks, manifests, len(tbl.Schema().Fields()))
			return tasks, nil
		}
	}
	e.planned.full.Add(1)
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		if filter != nil {
			return nil, fmt.Errorf("plan files of %s where %s: %w", strings.Join(tbl.Identifier(), "."), filter, err)
		}
		return nil, fmt.Errorf("plan files of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	// The second wall: never read a file outside the table's location,
	// whatever the metadata says (only a plan that passes is cached).
	if err := lake.CheckTasks(tbl, tasks); err != nil {
		return nil, err
	}
	tasks = lake.WholeFiles(tasks)
	var manifests []string
	if filter == nil {
		if manifests, err = manifestPaths(ctx, tbl, snapshot); err != nil {
			return nil, err
		}
	}
	e.plans.Add(key, tasks, manifests, len(tbl.Schema().Fields()))
	return tasks, nil
}

// column is a top-level column of the view.
type column struct {
	id       int
	name     string
	typ      string // DuckDB type
	required bool
}

func columnsOf(s *iceberg.Schema) ([]column, error) {
	var cols []column
	for _, f := range s.Fields() {
		t, err := duckType(f.Type)
		if err != nil {
			return nil, err
		}
		cols = append(cols, column{id: f.ID, name: f.Name, typ: t, required: f.Required})
	}
	return cols, nil
}

// schemaMap renders read_parquet's schema parameter: columns by Iceberg
// field id, so that renamed, reordered and added columns read right.
func schemaMap(cols []column) string {
	var b strings.Builder
	b.WriteString("MAP{")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d: {name: %s, type: %s, default_value: NULL}", c.id, sqlString(c.name), sqlString(c.typ))
	}
	b.WriteString("}")
	return b.String()
}

// baseSQL renders the rows of a snapshot: its data files read by field id,
// without the rows its position and equality delete files remove.
func (e *Engine) baseSQL(ctx context.Context, schema *iceberg.Schema, tasks []table.FileScanTask, pins *pinSet) (string, error) {
	return e.scanSQL(ctx, schema, tasks, pins, false)
}

// scanSQL is baseSQL, with the row lineage columns when lineage is set
// (see lineageSQL).
func (e *Engine) scanSQL(ctx context.Context, schema *iceberg.Schema, tasks []table.FileScanTask, pins *pinSet, lineage bool) (string, error) {
	cols, err := columnsOf(schema)
	if err != nil {
		return "", err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = "d." + quoteIdent(c.name)
	}
	if len(tasks) == 0 {
		empty := make([]string, len(cols))
		for i, c := range cols {
			empty[i] = "CAST(NULL AS " + c.typ + ") AS " + quoteIdent(c.name)
		}
		if lineage {
			empty = append(empty, "CAST(NULL AS BIGINT) AS "+quoteIdent(iceberg.RowIDColumnName),
				"CAST(NULL AS BIGINT) AS "+quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName))
		}
		if len(empty) == 0 {
			return "SELECT WHERE false", nil
		}
		return "SELECT " + strings.Join(empty, ", ") + " WHERE false", nil
	}
	var (
		paths    []string
		pathOf   = map[string]string{} // data file location -> path
		posDel   []string              // position delete file paths
		posSeen  = map[string]bool{}
		hasPos   []string // data file locations with position deletes
		eqByFile = map[string][]string{}
		eqFiles  = map[string]iceberg.DataFile{}
		dvDel    []string // deletion vectors' position files
		dvMap    []string // ('location', 'path') of the data files they name
	)
	for _, t := range tasks {
		loc := t.File.FilePath()
		p, err := e.files.path(ctx, loc, pins)
		if err != nil {
			return "", err
		}
		paths = append(paths, p)
		pathOf[loc] = p
		if len(t.DeleteFiles) > 0 {
			hasPos = append(hasPos, loc)
		}
		// A v3 table's deletion vectors (at most one live per data file)
		// are read as position files made from their bitmaps.
		for _, d := range t.DeletionVectorFiles {
			dp, err := e.files.dvPath(ctx, d, loc, t.File.Count(), pins)
			if err != nil {
				return "", err
			}
			dvDel = append(dvDel, dp)
			dvMap = append(dvMap, "("+sqlString(loc)+", "+sqlString(p)+")")
		}
		for _, d := range t.DeleteFiles {
			if posSeen[d.FilePath()] {
				continue
			}
			posSeen[d.FilePath()] = true
			dp, err := e.files.path(ctx, d.FilePath(), pins)
			if err != nil {
				return "", err
			}
			posDel = append(posDel, dp)
		}
		for _, d := range t.EqualityDeleteFiles {
			eqFiles[d.FilePath()] = d
			eqByFile[d.FilePath()] = append(eqByFile[d.FilePath()], loc)
		}
	}
	byName := !lineage && e.readableByName(ctx, schema, cols, tasks, pathOf)
	if byName {
		for i, c := range cols {
			names[i] = "CAST(d." + quoteIdent(c.name) + " AS " + c.typ + ") AS " + quoteIdent(c.name)
		}
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	if len(names) == 0 {
		b.WriteString("NULL AS __floe_none")
	}
	b.WriteString(strings.Join(names, ", "))
	if lineage {
		b.WriteString(lineageColumns)
	}
	b.WriteString(" FROM read_parquet(")
	b.WriteString(sqlList(paths))
	if !byName {
		b.WriteString(", schema=")
		if lineage {
			b.WriteString(schemaMap(append(cols[:len(cols):len(cols)], lineageFileColumns...)))
		} else {
			b.WriteString(schemaMap(cols))
		}
	}
	deletes := len(posDel) > 0 || len(eqFiles) > 0 || len(dvDel) > 0
	if deletes || lineage {
		b.WriteString(", filename=true, file_row_number=true")
	}
	b.WriteString(") AS d")
	if lineage {
		appendLineageJoin(&b, tasks, pathOf)
	}
	var m []string
	for _, loc := range hasPos {
		m = append(m, "("+sqlString(loc)+", "+sqlString(pathOf[loc])+")")
	}
	if len(dvDel) > 0 {
		appendPositionJoin(&b, "dv", dvDel, dvMap)
	}
	err = appendDeleteJoins(&b, schema, posDel, m, eqFiles,
		func(loc string) (string, error) { return e.files.path(ctx, loc, pins) },
		func(loc string) []string {
			var targets []string
			for _, dl := range eqByFile[loc] {
				targets = append(targets, pathOf[dl])
			}
			return targets
		})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// appendDeleteJoins appends to b, a query that reads data files as d with
// filename and file_row_number, the anti-joins that apply deletes:
// position delete files (posDel, the paths to read; posMap, one
// "('location', 'path')" row per data file they may name) and equality
// delete files (eqFiles by location; eqPath gives the path to read one,
// eqTargets the paths of the data files it applies to, those of a lower
// sequence number).
func appendDeleteJoins(b *strings.Builder, schema *iceberg.Schema, posDel, posMap []string, eqFiles map[string]iceberg.DataFile,
	eqPath func(loc string) (string, error), eqTargets func(loc string) []string) error {
	if len(posDel) > 0 {
		appendPositionJoin(b, "pd", posDel, posMap)
	}
	for i, loc := range slices.Sorted(maps.Keys(eqFiles)) {
		ids := eqFiles[loc].EqualityFieldIDs()
		if len(ids) == 0 {
			return unsupported("equality delete file %s names no columns", loc)
		}
		var ecols []column
		var conds []string
		alias := "ed" + strconv.Itoa(i)
		for _, id := range ids {
			f, ok := schema.FindFieldByID(id)
			if !ok {
				return unsupported("equality delete file %s uses a column that is no longer in the table", loc)
			}
			t, err := duckType(f.Type)
			if err != nil {
				return err
			}
			ecols = append(ecols, column{id: id, name: f.Name, typ: t})
			conds = append(conds, fmt.Sprintf("%s.%s IS NOT DISTINCT FROM d.%s", alias, quoteIdent(f.Name), quoteIdent(f.Name)))
		}
		dp, err := eqPath(loc)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, " ANTI JOIN (SELECT * FROM read_parquet(%s, schema=%s)) AS %s ON d.filename IN (%s) AND %s",
			sqlList([]string{dp}), schemaMap(ecols), alias, strings.Join(quoteAll(eqTargets(loc)), ", "), strings.Join(conds, " AND "))
	}
	return nil
}

// appendPositionJoin appends to b the anti-join, named alias, that removes
// the rows listed in position files (file_path, pos) from the data files
// read as d: files are the paths to read, posMap one "('location',
// 'path')" row per data file they may name.
func appendPositionJoin(b *strings.Builder, alias string, files, posMap []string) {
	fmt.Fprintf(b, " ANTI JOIN (SELECT m.path, x.pos FROM read_parquet(%s) AS x JOIN (VALUES %s) AS m(loc, path) ON x.file_path = m.loc) AS %s ON %s.path = d.filename AND %s.pos = d.file_row_number",
		sqlList(files), strings.Join(posMap, ", "), alias, alias, alias)
}

// readableByName reports whether the data files of tasks can be read by
// column name instead of through read_parquet's field-id schema map, which
// DuckDB binds again at every execution of a prepared query (it never
// caches the plan of a parameterized query that scans a table), at a cost
// of about a third of a point query. It can when every column is of a
// primitive type and every data file has exactly the table's top-level
// columns: the same field ids under the same names. The columns are then
// cast to the table's types (a cast to the type a column already has is
// no cast at all, so filters still reach the Parquet reader).
func (e *Engine) readableByName(ctx context.Context, schema *iceberg.Schema, cols []column, tasks []table.FileScanTask, pathOf map[string]string) bool {
	if len(cols) == 0 {
		return false
	}
	want := make(map[int]column, len(cols))
	text := make(map[int]bool, len(cols))
	lower := make(map[string]bool, len(cols))
	for _, c := range cols {
		f, ok := schema.FindFieldByID(c.id)
		if !ok || !byNameType(f.Type) {
			return false
		}
		ln := strings.ToLower(c.name)
		if lower[ln] {
			return false // names DuckDB would not tell apart
		}
		lower[ln] = true
		want[c.id] = c
		text[c.id] = f.Type.Equals(iceberg.PrimitiveTypes.String)
	}
	seen := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		loc := t.File.FilePath()
		if seen[loc] {
			continue
		}
		seen[loc] = true
		ff, ok := e.files.fields(ctx, loc, pathOf[loc])
		if !ok || len(ff) != len(want) {
			return false
		}
		for _, f := range ff {
			c, ok := want[f.id]
			// A string column must be text in the file: DuckDB reads
			// unannotated bytes as BLOB, and a cast of those to VARCHAR
			// escapes non-ASCII bytes.
			if !ok || c.name != f.name || text[f.id] && !f.text {
				return false
			}
		}
	}
	return true
}

// byNameType reports whether a column of type t reads the same by name
// (then cast) as through the field-id schema map.
func byNameType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.DecimalType, iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.StringType, iceberg.BinaryType:
		return true
	}
	return false
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqlString quotes a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = sqlString(s)
	}
	return out
}

func sqlList(ss []string) string { return "[" + strings.Join(quoteAll(ss), ", ") + "]" }

var errNoSession = errors.New("engine: no session")
