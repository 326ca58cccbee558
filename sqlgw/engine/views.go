package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Views (CREATE [OR REPLACE] VIEW, DROP VIEW, ALTER VIEW ... RENAME TO)
// are Iceberg views of the catalog, as the REST catalog serves them: a
// version with one representation of dialect "duckdb" holding the query
// as given, the schema of the query's result columns, and the view's
// namespace as default namespace. A query naming a view expands it: the
// reference becomes a subquery of the view's SQL, which is then checked
// and resolved like the rest of the statement, with the invoker's
// privileges, row filters and masks. Reading a view needs SELECT on the
// view and on what it reads: a view never widens access.
//
// A view created SECURITY DEFINER reads with its owner's rights instead:
// the names in its expansion are resolved (privileges, row filters, masks)
// for the principal that wrote its current version, recorded in the
// version's summary (floe.definer), while the invoker needs SELECT on the
// view alone and its own filters on the view still apply. The mode is the
// view property floe.security; only a version that records its definer
// runs with definer rights, so whoever changes the SQL becomes the
// definer, and the REST catalog refuses a version naming another
// principal as its definer (restcat).

// viewDialect is the dialect of the representations the SQL endpoint
// writes and expands.
const viewDialect = "duckdb"

// maxViewDepth bounds the expansion of views naming views.
const maxViewDepth = 16

// maxViewTrees bounds the engine's cache of parsed view expansions, and
// maxViewTreeSQL the SQL of one it keeps (longer ones are parsed at each
// read).
const (
	maxViewTrees   = 256
	maxViewTreeSQL = 8 << 10
)

// replaceView turns ref into a subquery of a view's expansion SQL, parsed
// once per text (the engine's bounded cache of trees; each use decodes a
// fresh copy, which analysis then rewrites).
func (ss *session) replaceView(ctx context.Context, ref *tableRef, sql string) error {
	if raw, ok := ss.e.trees.Get(sql); ok {
		var stmt node
		if err := unmarshalTree(raw, &stmt); err != nil {
			return fmt.Errorf("engine: a cached view tree: %w", err)
		}
		replaceWith(ref, stmt)
		return nil
	}
	stmts, err := ss.serialize(ctx, sql)
	if err != nil || len(stmts) != 1 {
		return fmt.Errorf("engine: the view of %s does not parse: %w", strings.Join(ref.path, "."), err)
	}
	if len(sql) <= maxViewTreeSQL {
		raw, err := json.Marshal(stmts[0])
		if err != nil {
			return fmt.Errorf("engine: a view tree: %w", err)
		}
		ss.e.trees.Add(sql, raw)
	}
	replaceWith(ref, stmts[0])
	return nil
}

// The view property and version summary keys of definer rights.
const (
	// SecurityProperty is the view property holding a view's security
	// mode: SecurityDefiner or SecurityInvoker (the default).
	SecurityProperty = "floe.security"
	// DefinerSummary is the version summary key naming the principal
	// whose rights a definer-rights view's version reads with.
	DefinerSummary = "floe.definer"
	// DefinerIDSummary is the version summary key holding that
	// principal's id.
	DefinerIDSummary = "floe.definer-id"
	securityDefiner  = "definer"
	securityInvoker  = "invoker"
)

// viewRights are the rights the expansion of a definer-rights view reads
// with: its owner's.
type viewRights struct {
	sub  authz.Subject
	view string // the view's name, for messages
}

// denied wraps the refusal of a table a definer-rights view reads.
func (r *viewRights) denied(wh string, id catalog.Ident, err error) error {
	return floe.Wrap(floe.KindOf(err), err, "view %s runs with the rights of its owner %s, who may not read %s.%s", r.view, r.sub, wh, id)
}

// viewCatalog is what views need from the catalog (*catalog.Catalog).
type viewCatalog interface {
	CreateView(ctx context.Context, wh string, ns catalog.Namespace, req catalog.CreateViewRequest) (*catalog.ViewState, error)
	LoadView(ctx context.Context, wh string, id catalog.Ident) (*catalog.ViewState, error)
	ReplaceView(ctx context.Context, wh string, id catalog.Ident, vc catalog.ViewCommit) (*catalog.ViewState, error)
	DropView(ctx context.Context, wh string, id catalog.Ident) error
}

func (ss *session) views() (viewCatalog, error) {
	vc, ok := ss.e.opts.DDL.(viewCatalog)
	if !ok {
		return nil, unsupported("views are not available on this SQL endpoint")
	}
	return vc, nil
}

// runViewDDL runs CREATE VIEW, DROP VIEW and ALTER VIEW.
func (ss *session) runViewDDL(ctx context.Context, d *ddlParsed) (read []string, err error) {
	vc, err := ss.views()
	if err != nil {
		return nil, err
	}
	wh, id, err := ss.tableName(d.path)
	if err != nil {
		return nil, err
	}
	if ss.pg.TxStatus() == pgwire.TxInBlock {
		if ss.txn == nil {
			ss.txn = newTxn(ss)
		}
		return ss.viewDDLInBlock(ctx, ss.txn, vc, d, wh, id)
	}
	s := authz.View(wh, id)
	switch d.kind {
	case ddlDropView:
		if err := ss.require(ctx, authz.Drop, s); err != nil {
			return nil, err
		}
		if err := vc.DropView(ctx, wh, id); err != nil {
			if floe.KindOf(err) == floe.NotFound {
				if d.ifExists {
					return nil, nil
				}
				return nil, undefinedTable(d.path, err)
			}
			return nil, err
		}
		if g := ss.e.opts.Grants; g != nil {
			if _, err := g.DeleteGrantsOn(ctx, s); err != nil {
				ss.e.log.ErrorContext(ctx, "sql: cannot remove the grants of a dropped view", "err", err)
			}
		}
		return nil, nil
	case ddlAlterView:
		to, err := ss.renameTarget(id, d)
		if err != nil {
			return nil, err
		}
		if err := ss.require(ctx, authz.Drop, s); err != nil {
			return nil, err
		}
		if err := ss.require(ctx, authz.CreateView, authz.NamespaceOf(wh, to.Namespace)); err != nil {
			return nil, err
		}
		if err := ss.e.opts.DDL.Rename(ctx, wh, id, to, catalog.KindView); err != nil {
			gone, err := renameErr(d, to, err)
			if gone {
				return nil, nil
			}
			return nil, err
		}
		if g := ss.e.opts.Grants; g != nil {
			if _, err := g.MoveGrantsOn(ctx, s, authz.View(wh, to)); err != nil {
				ss.e.log.ErrorContext(ctx, "sql: cannot move the grants of a renamed view", "err", err)
			}
		}
		return nil, nil
	}
	return ss.createView(ctx, vc, d, wh, id)
}

// renameTarget resolves the new name of a rename.
func (ss *session) renameTarget(id catalog.Ident, d *ddlParsed) (catalog.Ident, error) {
	to := catalog.Ident{Namespace: id.Namespace, Name: d.newPath[len(d.newPath)-1]}
	if len(d.newPath) > 1 {
		_, id2, err := ss.tableName(d.newPath)
		if err != nil {
			return catalog.Ident{}, err
		}
		to = id2
	}
	return to, to.Validate()
}

// viewOf plans a view's query for its creator (checked, with the
// creator's privileges) and returns the view's first version and schema:
// the query's result columns.
func (ss *session) viewOf(ctx context.Context, d *ddlParsed, id catalog.Ident) (*view.Version, []iceberg.NestedField, []string, error) {
	if d.security == securityDefiner && (ss.unrestricted || ss.sub.Admin || ss.sub.Principal == "") {
		// An administrator's rights come from its token, not from grants
		// that could be recorded and checked at each read.
		return nil, nil, nil, unsupported("an administrator cannot create a SECURITY DEFINER view: create it as the principal whose rights it should read with")
	}
	sel, err := ss.prepareSelect(ctx, d.query, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	defer sel.Close()
	fields, err := queryFields(sel, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	reps := []view.Representation{view.NewRepresentation(d.query, viewDialect)}
	if trino := ss.trinoView(ctx, d.query, ss.e.opts.Warehouse); trino != "" {
		reps = append(reps, view.NewRepresentation(trino, trinoDialect))
	}
	if spark := ss.sparkView(ctx, d.query, ss.e.opts.Warehouse); spark != "" {
		reps = append(reps, view.NewRepresentation(spark, sparkDialect))
	}
	summary := view.VersionSummary{"engine-name": "floe", "floe.sql.principal": ss.pg.Identity.Principal}
	if d.security == securityDefiner {
		summary[DefinerSummary] = ss.sub.Principal
		summary[DefinerIDSummary] = ss.sub.PrincipalID
	}
	ver := &view.Version{VersionID: 1, SchemaID: 0, TimestampMS: time.Now().UnixMilli(),
		Summary:          summary,
		Representations:  reps,
		DefaultNamespace: []string(id.Namespace)}
	return ver, fields, sel.tables, nil
}

// viewProps are the properties of a view CREATE VIEW writes: its security
// mode.
func viewProps(d *ddlParsed) map[string]string {
	mode := d.security
	if mode == "" {
		mode = securityInvoker
	}
	return map[string]string{SecurityProperty: mode}
}

// viewDDLInBlock stages view DDL in a transaction block: the catalog
// creates, renames and drops the views at COMMIT, with the block's table
// changes.
func (ss *session) viewDDLInBlock(ctx context.Context, t *txnState, vc viewCatalog, d *ddlParsed, wh string, id catalog.Ident) ([]string, error) {
	switch d.kind {
	case ddlDropView:
		return nil, ss.dropViewInBlock(ctx, t, wh, id, d.ifExists, d.path)
	case ddlAlterView:
		to, err := ss.renameTarget(id, d)
		if err != nil {
			return nil, err
		}
		k, err := t.kind(ctx, wh, id)
		if err != nil {
			return nil, err
		}
		if k != catalog.KindView {
			if d.ifExists {
				return nil, nil
			}
			return nil, undefinedTable(d.path, floe.E(floe.NotFound, "view", "View does not exist: %s", id))
		}
		_, err = ss.renameViewInBlock(ctx, t, wh, id, to)
		return nil, err
	}
	if err := ss.require(ctx, authz.CreateView, authz.NamespaceOf(wh, id.Namespace)); err != nil {
		return nil, err
	}
	taken, err := t.exists(ctx, wh, id)
	if err != nil {
		return nil, err
	}
	if taken {
		if d.orReplace {
			return nil, notInBlock("CREATE OR REPLACE VIEW of an existing view")
		}
		return nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", id.String())}
	}
	if err := t.roomForOp(); err != nil {
		return nil, err
	}
	ver, fields, read, err := ss.viewOf(ctx, d, id)
	if err != nil {
		return nil, err
	}
	st, err := vc.(interface {
		StageView(ctx context.Context, wh string, ns catalog.Namespace, req catalog.CreateViewRequest) (*catalog.ViewState, error)
	}).StageView(ctx, wh, id.Namespace, catalog.CreateViewRequest{Name: id.Name, Schema: iceberg.NewSchema(0, fields...), Version: ver, Properties: viewProps(d)})
	if err != nil {
		return nil, err
	}
	t.views = append(t.views, &stagedView{wh: wh, id: id, sql: d.query, loc: st.Location})
	delete(t.gone, txnKey(wh, id))
	return read, nil
}

func (ss *session) createView(ctx context.Context, vc viewCatalog, d *ddlParsed, wh string, id catalog.Ident) ([]string, error) {
	if err := ss.require(ctx, authz.CreateView, authz.NamespaceOf(wh, id.Namespace)); err != nil {
		return nil, err
	}
	ver, fields, read, err := ss.viewOf(ctx, d, id)
	if err != nil {
		return nil, err
	}
	sc := iceberg.NewSchema(0, fields...)
	_, err = vc.CreateView(ctx, wh, id.Namespace, catalog.CreateViewRequest{Name: id.Name, Schema: sc, Version: ver, Properties: viewProps(d)})
	switch {
	case err == nil:
		ss.owned(ctx, authz.View(wh, id))
		return read, nil
	case floe.KindOf(err) == floe.NotFound && floe.EntityOf(err) == "namespace":
		return nil, &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", id.Namespace.String()), Err: err}
	case floe.KindOf(err) != floe.AlreadyExists:
		return nil, err
	}
	if !d.orReplace || floe.EntityOf(err) != "view" {
		return nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", id.String()), Err: err}
	}
	if err := ss.require(ctx, authz.Modify, authz.View(wh, id)); err != nil {
		return nil, err
	}
	cur, err := vc.LoadView(ctx, wh, id)
	if err != nil {
		return nil, err
	}
	md := cur.Metadata
	var next int64
	for _, v := range md.Versions() {
		next = max(next, v.VersionID)
	}
	schemaID := 0
	for _, s := range md.Schemas() {
		schemaID = max(schemaID, s.ID+1)
	}
	updates := view.Updates{}
	ver.VersionID, ver.SchemaID = next+1, schemaID
	for _, s := range md.Schemas() {
		if iceberg.NewSchema(s.ID, fields...).Equals(s) {
			ver.SchemaID = s.ID // the catalog keeps one copy of a schema
		}
	}
	if ver.SchemaID == schemaID {
		updates = append(updates, view.NewAddSchemaUpdate(iceberg.NewSchema(schemaID, fields...)))
	}
	updates = append(updates, view.NewAddViewVersionUpdate(ver), view.NewSetCurrentVersionUpdate(-1),
		view.NewSetPropertiesUpdate(viewProps(d)))
	_, err = vc.ReplaceView(ctx, wh, id, catalog.ViewCommit{
		Requirements: view.Requirements{view.AssertViewUUID(md.ViewUUID())},
		Updates:      updates,
	})
	if err != nil {
		return nil, err
	}
	return read, nil
}

// analyzeViews analyzes stmt with the views it names expanded; the
// reference at query location skip (a DML target) stays.
func (ss *session) analyzeViews(ctx context.Context, stmt node, skip string) (*analysis, error) {
	var definers map[uintptr]*viewRights
	for depth := 0; ; depth++ {
		// floe_metric calls become subqueries of their metric's SQL
		// (metrics.go), whose names are then resolved like any other.
		if found, err := ss.expandMetrics(ctx, stmt); err != nil {
			return nil, err
		} else if found && depth >= maxViewDepth {
			return nil, &pgwire.Error{Code: "54001", Message: fmt.Sprintf("floe_metric calls nested more than %d deep", maxViewDepth)}
		}
		a, err := analyzeWith(stmt, ss.temps, definers)
		if err != nil {
			return nil, err
		}
		vc, ok := ss.e.opts.DDL.(viewCatalog)
		if !ok {
			return a, nil
		}
		expanded := false
		for _, ref := range a.refs {
			if skip != "" && fmt.Sprint(ref.n["query_location"]) == skip {
				continue
			}
			// A table (the common case) is loaded once, here, for
			// resolve: only a name that is no table is looked up as a view.
			wh, id := ss.e.identOf(ref.path)
			if id.Validate() != nil {
				continue
			}
			tbl, err := ss.loadTable(ctx, wh, id)
			if err == nil {
				ref.tbl = tbl
				continue
			}
			if floe.KindOf(err) != floe.NotFound {
				continue // resolve reports it, after the privilege check
			}
			// Outside a transaction block the failed lookup says whether
			// the name is a view, and where its metadata is.
			var other *catalog.OtherKindError
			loc := ""
			if ss.txn == nil && errors.As(err, &other) {
				if other.Entity.Kind != catalog.KindView {
					continue
				}
				loc = other.Entity.MetadataLocation
			}
			sql, rights, err := ss.viewSQL(ctx, vc, ref, loc)
			if err != nil {
				return nil, err
			}
			if sql == "" {
				continue
			}
			if depth >= maxViewDepth {
				return nil, &pgwire.Error{Code: "54001", Message: fmt.Sprintf("views nested more than %d deep (does view %s name itself?)", maxViewDepth, strings.Join(ref.path, "."))}
			}
			if err := ss.replaceView(ctx, ref, sql); err != nil {
				return nil, err
			}
			if rights != nil {
				if definers == nil {
					definers = map[uintptr]*viewRights{}
				}
				definers[nodeKey(ref.n)] = rights
			}
			expanded = true
		}
		if !expanded {
			return a, nil
		}
	}
}

// viewSQL returns the SQL of the view ref names, "" when it names no view,
// and the rights its expansion reads with when they are its owner's
// (definer rights; nil: those ref is read with). The SQL is the view's
// query wrapped in the reader's data filters on the view, if any.
//
// loc is the view's metadata location when the caller's lookup found it
// ("" to look the name up).
func (ss *session) viewSQL(ctx context.Context, vc viewCatalog, ref *tableRef, loc string) (string, *viewRights, error) {
	wh, id := ss.e.identOf(ref.path)
	if id.Validate() != nil || ss.createdHere(wh, id) {
		return "", nil, nil
	}
	if t := ss.txn; t != nil {
		key := txnKey(wh, id)
		if _, ok := t.tables[key]; ok || t.gone[key] {
			return "", nil, nil
		}
		if v := t.view(wh, id); v != nil && ref.rights == nil {
			return v.sql, nil, nil // the caller's own, created in the block
		}
		id = t.catalogName(wh, id)
	}
	// One catalog lookup: the view's metadata, or NotFound for a name that
	// is no view.
	var v *catalog.ViewState
	var err error
	if at, ok := vc.(interface {
		LoadViewAt(ctx context.Context, loc string) (*catalog.ViewState, error)
	}); ok && loc != "" {
		v, err = at.LoadViewAt(ctx, loc)
	} else {
		v, err = vc.LoadView(ctx, wh, id)
	}
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return "", nil, nil
		}
		return "", nil, err
	}
	if ref.at != nil {
		return "", nil, unsupported("a view has no snapshots: %s cannot be read AT a version or time", strings.Join(ref.path, "."))
	}
	// The reader: the session, or the owner of a definer-rights view this
	// name is inside.
	sub, unrestricted := ss.sub, ss.unrestricted && ref.rights == nil
	if ref.rights != nil {
		sub = ref.rights.sub
	}
	var filters []authz.DataFilter
	if !unrestricted {
		pol, err := ss.e.opts.Policies.Policy(ctx)
		if err != nil {
			return "", nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
		if filters, err = pol.ReadFilters(sub, authz.View(wh, id)); err != nil {
			if ref.rights != nil {
				return "", nil, ref.rights.denied(wh, id, err)
			}
			return "", nil, err
		}
	}
	md := v.Metadata
	ver := md.CurrentVersion()
	if ver == nil {
		return "", nil, unsupported("view %s has no current version", id)
	}
	sql, err := ss.viewQuery(ctx, ver, wh, id)
	if err != nil {
		return "", nil, err
	}
	var rights *viewRights
	if strings.EqualFold(md.Properties()[SecurityProperty], securityDefiner) {
		definer := ver.Summary[DefinerSummary]
		if definer == "" {
			return "", nil, floe.E(floe.Forbidden, "privilege",
				"view %s is SECURITY DEFINER but its current version records no definer (it was written by another engine): recreate it through the SQL endpoint", id)
		}
		rights = &viewRights{sub: authz.Subject{Principal: definer, PrincipalID: ver.Summary[DefinerIDSummary]}, view: wh + "." + id.String()}
	}
	if filters != nil {
		// The reader's own row filters and column masks on the view.
		cols, err := columnsOf(md.CurrentSchema())
		if err != nil {
			return "", nil, err
		}
		tc := &authz.TableColumns{UUID: md.ViewUUID().String()}
		for _, s := range md.Schemas() {
			var fs []authz.Field
			for _, f := range s.Fields() {
				fs = append(fs, authz.Field{ID: f.ID, Name: f.Name})
			}
			tc.Schemas = append(tc.Schemas, authz.TableSchema{ID: s.ID, Fields: fs})
			if s.ID == md.CurrentSchema().ID {
				tc.Current = fs
			}
		}
		if sql, err = ss.e.filterSQL(ctx, ss, sub, authz.View(wh, id), id, tc, cols, sql, false); err != nil {
			return "", nil, err
		}
	}
	return sql, rights, nil
}

// viewQuery returns the DuckDB query of a view version: its duckdb
// representation, else its trino one, else its spark one, translated when
// within the subset whose meaning the engines share (foreignSQL); the
// error names the dialects present and why none runs.
func (ss *session) viewQuery(ctx context.Context, ver *view.Version, wh string, id catalog.Ident) (string, error) {
	for _, r := range ver.Representations {
		if strings.EqualFold(r.Dialect, viewDialect) {
			return r.Sql, nil
		}
	}
	var why []string
	for _, want := range []string{trinoDialect, sparkDialect} {
		for _, r := range ver.Representations {
			if !strings.EqualFold(r.Dialect, want) {
				continue
			}
			sql, reason := ss.foreignSQL(ctx, r, ver, wh)
			if reason == "" {
				return sql, nil
			}
			why = append(why, fmt.Sprintf("%s (%s, outside the subset Floe runs)", r.Dialect, reason))
		}
	}
	for _, r := range ver.Representations {
		switch strings.ToLower(r.Dialect) {
		case trinoDialect, sparkDialect:
		default:
			why = append(why, fmt.Sprintf("%s (a dialect Floe does not run)", r.Dialect))
		}
	}
	if len(why) == 0 {
		why = []string{"none"}
	}
	return "", unsupported("view %s has representations %s: create a duckdb or trino representation", id, strings.Join(why, ", "))
}
