package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// DDLCatalog is what DDL statements need from the catalog
// (*catalog.Catalog): the same operations the REST catalog runs.
type DDLCatalog interface {
	CreateNamespace(ctx context.Context, wh string, ns catalog.Namespace, props map[string]string) error
	DropNamespace(ctx context.Context, wh string, ns catalog.Namespace) error
	CreateTable(ctx context.Context, wh string, ns catalog.Namespace, req catalog.CreateTableRequest) (*catalog.TableState, error)
	DropTable(ctx context.Context, wh string, id catalog.Ident, purge bool) error
	Rename(ctx context.Context, wh string, from, to catalog.Ident, kind catalog.Kind) error
	Exists(ctx context.Context, wh string, id catalog.Ident, kind catalog.Kind) (bool, error)
	CommitTransaction(ctx context.Context, wh string, commits []catalog.TableCommit) error
}

// Grants keeps grants in step with DDL, as the REST catalog does
// (*authz.Authorizer): the creator owns what it creates, a dropped
// object's grants go, a renamed one's move.
type Grants interface {
	GrantOwner(ctx context.Context, sub authz.Subject, s authz.Securable) error
	DeleteGrantsOn(ctx context.Context, s authz.Securable) (int, error)
	MoveGrantsOn(ctx context.Context, from, to authz.Securable) (int, error)
}

// fileSystem is implemented by Tables that can say which FileIO new
// tables are written through (*lake.Lake).
type fileSystem interface{ FS() icebergio.IO }

// ddlStmt is a prepared DDL statement; it runs when executed.
type ddlStmt struct {
	ss   *session
	text string
	d    *ddlParsed
}

// prepareDDL parses a DDL statement.
func (ss *session) prepareDDL(sql string) (*ddlStmt, error) {
	d, err := parseDDL(sql)
	if err != nil {
		return nil, err
	}
	return &ddlStmt{ss: ss, text: sql, d: d}, nil
}

// Params implements pgwire.Statement.
func (st *ddlStmt) Params() []uint32 { return nil }

// Columns implements pgwire.Statement.
func (st *ddlStmt) Columns() []pgwire.Column { return nil }

// Close implements pgwire.Statement.
func (st *ddlStmt) Close() error { return nil }

// Execute implements pgwire.Statement.
func (st *ddlStmt) Execute(ctx context.Context, _ []any) (pgwire.Result, error) {
	ss := st.ss
	if ss.pg.TxStatus() == pgwire.TxFailed {
		return nil, errTxFailed
	}
	ctx = catalog.WithClaimant(ctx, catalog.Claimant{Principal: ss.sub.PrincipalID, Admin: ss.unrestricted})
	tag, written, read, err := ss.runDDL(ctx, st.d)
	ss.auditDDL(ctx, st, written, read, err)
	if err != nil {
		return nil, ss.publicError(err, false)
	}
	return &pgwire.StaticResult{CommandTag: tag}, nil
}

// auditDDL records one DDL statement as a sql.query event: the tables it
// wrote, and those it read (CREATE TABLE ... AS).
func (ss *session) auditDDL(ctx context.Context, st *ddlStmt, written, read []string, err error) {
	if ss.e.opts.Audit == nil {
		return
	}
	if written == nil {
		written = []string{}
	}
	if read == nil {
		read = []string{}
	}
	detail := map[string]any{"sql": st.text, "statement": st.d.kind.String(), "tables": read, "written": written, "session": ss.pg.ID}
	if ss.pg.TxStatus() == pgwire.TxInBlock {
		detail["transaction"] = "staged"
	}
	ss.emitAudit(ctx, detail, err)
}

// notInBlock is the error for a statement that cannot be part of a
// transaction block (it is no table commit).
func notInBlock(what string) error {
	return &pgwire.Error{Code: "25001", Message: what + " cannot run inside a transaction block",
		Hint: "Run it outside BEGIN ... COMMIT: schema changes, DROP TABLE and table renames commit on their own."}
}

// require checks that the caller may do priv on s: a token that may
// change the catalog, and the privilege (the owner's privileges on a table
// the open transaction created).
func (ss *session) require(ctx context.Context, priv authz.Privilege, s authz.Securable) error {
	if ss.readOnly {
		return floe.E(floe.Forbidden, "privilege", "the token is read-only (scope catalog:read): it may not change %s", s)
	}
	if ss.unrestricted {
		return nil
	}
	if s.Kind == authz.KindTable && len(s.Namespace) > 0 {
		if ss.createdHere(s.Warehouse, catalog.Ident{Namespace: s.Namespace, Name: s.Name}) && priv != authz.ManageGrants {
			return nil
		}
	}
	pol, err := ss.e.opts.Policies.Policy(ctx)
	if err != nil {
		return floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
	}
	return pol.Check(ss.sub, priv, s)
}

// owned grants the caller the owner's privileges on s; a failure is
// logged (the object exists; an administrator can grant them).
func (ss *session) owned(ctx context.Context, s authz.Securable) {
	g := ss.e.opts.Grants
	if ss.unrestricted || g == nil {
		return
	}
	if err := g.GrantOwner(ctx, ss.sub, s); err != nil {
		ss.e.log.ErrorContext(ctx, "sql: cannot grant the creator's privileges", "securable", s.String(), "err", err)
	}
}

// database checks the database part of a name: the warehouse.
func (ss *session) database(name string) (string, error) {
	wh := ss.e.opts.Warehouse
	if name != wh && ss.e.isForeign(name) {
		return "", readOnlyForeign(name)
	}
	if name != wh {
		return "", &pgwire.Error{Code: pgwire.CodeFeatureNotSupported,
			Message: fmt.Sprintf("cross-database references are not implemented: %q (this endpoint's database is the warehouse %q)", name, wh)}
	}
	return wh, nil
}

// schemaName resolves a schema (namespace) name: ns or warehouse.ns.
func (ss *session) schemaName(path []string) (string, catalog.Namespace, error) {
	wh := ss.e.opts.Warehouse
	if len(path) == 3 {
		return "", nil, syntaxError("improper schema name: %s", strings.Join(path, "."))
	}
	if len(path) == 2 {
		var err error
		if wh, err = ss.database(path[0]); err != nil {
			return "", nil, err
		}
		path = path[1:]
	}
	ns := catalog.Namespace(strings.Split(path[0], "."))
	if err := ns.Validate(); err != nil {
		return "", nil, &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("invalid schema name %q: %s", path[0], floe.PublicMessage(err))}
	}
	return wh, ns, nil
}

// tableName resolves a table name: schema.table or warehouse.schema.table.
func (ss *session) tableName(path []string) (string, catalog.Ident, error) {
	if len(path) == 1 {
		return "", catalog.Ident{}, &pgwire.Error{Code: "3F000",
			Message: fmt.Sprintf("name the schema of table %q: schema.table (Floe has no default schema)", path[0])}
	}
	wh, ns, err := ss.schemaName(path[:len(path)-1])
	if err != nil {
		return "", catalog.Ident{}, err
	}
	return wh, catalog.Ident{Namespace: ns, Name: path[len(path)-1]}, nil
}

// runDDL runs one DDL statement and returns its command tag, the tables
// it wrote and the tables it read.
func (ss *session) runDDL(ctx context.Context, d *ddlParsed) (tag string, written, read []string, err error) {
	if ss.e.opts.DDL == nil {
		return "", nil, nil, unsupported("DDL is not available on this SQL endpoint")
	}
	inBlock := ss.pg.TxStatus() == pgwire.TxInBlock
	switch {
	case d.kind == ddlCreateView || d.kind == ddlDropView || d.kind == ddlAlterView:
		read, err := ss.runViewDDL(ctx, d)
		return d.kind.String(), nil, read, err
	case d.temp:
		return ss.createTemp(ctx, d)
	case d.kind == ddlDropTable && len(d.path) == 1:
		return d.kind.String(), nil, nil, ss.dropTemp(ctx, d)
	case d.kind == ddlCreateSchema:
		created, err := ss.createSchema(ctx, d)
		if err == nil && created != nil && inBlock {
			// A namespace is no table commit: it is created at once, and
			// dropped again if the block does not commit (see undoSchemas).
			if ss.txn == nil {
				ss.txn = newTxn(ss)
			}
			ss.txn.schemas = append(ss.txn.schemas, *created)
		}
		return d.kind.String(), nil, nil, err
	case d.kind == ddlDropSchema:
		if inBlock {
			return "", nil, nil, notInBlock("DROP SCHEMA")
		}
		return d.kind.String(), nil, nil, ss.dropSchema(ctx, d)
	case d.kind == ddlDropTable:
		if inBlock {
			if ss.txn == nil {
				ss.txn = newTxn(ss)
			}
			w, err := ss.dropInBlock(ctx, ss.txn, d)
			return d.kind.String(), w, nil, err
		}
		w, err := ss.dropTable(ctx, d)
		return d.kind.String(), w, nil, err
	case d.kind == ddlAlterTable && d.alter == alterRename:
		if inBlock {
			if ss.txn == nil {
				ss.txn = newTxn(ss)
			}
			w, err := ss.renameInBlock(ctx, ss.txn, d)
			return d.kind.String(), w, nil, err
		}
		w, err := ss.renameTable(ctx, d)
		return d.kind.String(), w, nil, err
	}
	// A table change: staged in the open block, or in a block of its own
	// committed at once.
	t := ss.txn
	if !inBlock || t == nil {
		t = newTxn(ss)
		ss.txn = t
	}
	if !inBlock {
		defer func() { ss.txn = nil }()
	}
	tag, target, read, err := ss.stageDDL(ctx, t, d)
	if err != nil {
		return "", nil, read, err
	}
	if inBlock {
		if target == "" {
			return tag, nil, read, nil
		}
		return tag, []string{target}, read, nil
	}
	written, err = ss.commitTxn(ctx, t)
	return tag, written, read, err
}

// createSchema creates the namespace d names; it returns the namespace it
// created (nil when IF NOT EXISTS found it existing).
func (ss *session) createSchema(ctx context.Context, d *ddlParsed) (*createdSchema, error) {
	wh, ns, err := ss.schemaName(d.path)
	if err != nil {
		return nil, err
	}
	container := authz.Warehouse(wh)
	if len(ns) > 1 {
		container = authz.NamespaceOf(wh, ns[:len(ns)-1])
	}
	if err := ss.require(ctx, authz.CreateNamespace, container); err != nil {
		return nil, err
	}
	props := d.props
	if props == nil {
		props = map[string]string{}
	}
	if err := ss.e.opts.DDL.CreateNamespace(ctx, wh, ns, props); err != nil {
		if floe.KindOf(err) == floe.AlreadyExists {
			if d.ifExists {
				return nil, nil
			}
			return nil, &pgwire.Error{Code: "42P06", Message: fmt.Sprintf("schema %q already exists", ns.String()), Err: err}
		}
		return nil, err
	}
	ss.owned(ctx, authz.NamespaceOf(wh, ns))
	return &createdSchema{wh: wh, ns: ns}, nil
}

// createdSchema is a namespace a transaction block created.
type createdSchema struct {
	wh string
	ns catalog.Namespace
}

// undoSchemas drops the namespaces a block that did not commit created, last
// first, as ROLLBACK would in PostgreSQL. One another session has put
// something into since is kept (it is no longer the block's alone), as is
// one that cannot be dropped now; both are logged.
func (ss *session) undoSchemas(ctx context.Context, t *txnState) {
	if t == nil || len(t.schemas) == 0 {
		return
	}
	ctx = catalog.WithClaimant(ctx, catalog.Claimant{Principal: ss.sub.PrincipalID, Admin: ss.unrestricted})
	for i := len(t.schemas) - 1; i >= 0; i-- {
		c := t.schemas[i]
		err := ss.e.opts.DDL.DropNamespace(ctx, c.wh, c.ns)
		switch {
		case err == nil:
			if g := ss.e.opts.Grants; g != nil {
				if _, err := g.DeleteGrantsOn(ctx, authz.NamespaceOf(c.wh, c.ns)); err != nil {
					ss.e.log.ErrorContext(ctx, "sql: cannot remove the grants of a rolled back schema", "err", err)
				}
			}
		case floe.KindOf(err) == floe.NotFound:
		default:
			ss.e.log.WarnContext(ctx, "sql: a schema created in a block that did not commit is kept", "schema", c.ns.String(), "err", err)
		}
	}
	t.schemas = nil
}

func (ss *session) dropSchema(ctx context.Context, d *ddlParsed) error {
	wh, ns, err := ss.schemaName(d.path)
	if err != nil {
		return err
	}
	if d.cascade {
		return unsupported("DROP SCHEMA ... CASCADE is not supported: drop the schema's tables first, then the schema")
	}
	if err := ss.require(ctx, authz.Drop, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	if err := ss.e.opts.DDL.DropNamespace(ctx, wh, ns); err != nil {
		switch floe.KindOf(err) {
		case floe.NotFound:
			if d.ifExists {
				return nil
			}
			return &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", ns.String()), Err: err}
		case floe.NotEmpty:
			return &pgwire.Error{Code: pgwire.CodeDependentObjectsExist, Message: fmt.Sprintf("cannot drop schema %q because other objects depend on it", ns.String()),
				Hint: "Drop its tables, views and schemas first (CASCADE is not supported).", Err: err}
		}
		return err
	}
	if g := ss.e.opts.Grants; g != nil {
		if _, err := g.DeleteGrantsOn(ctx, authz.NamespaceOf(wh, ns)); err != nil {
			ss.e.log.ErrorContext(ctx, "sql: cannot remove the grants of a dropped schema", "err", err)
		}
	}
	return nil
}

func (ss *session) dropTable(ctx context.Context, d *ddlParsed) ([]string, error) {
	wh, id, err := ss.tableName(d.path)
	if err != nil {
		return nil, err
	}
	// CASCADE drops what depends on the table; Floe records no such
	// dependency (a view naming the table is its own object, which then
	// fails when queried), so CASCADE drops the table alone, as RESTRICT.
	s := authz.Table(wh, id)
	if err := ss.require(ctx, authz.Drop, s); err != nil {
		return nil, err
	}
	cl := catalog.ClaimantOf(ctx)
	if !ss.unrestricted {
		pol, err := ss.e.opts.Policies.Policy(ctx)
		if err != nil {
			return nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
		cl.CanRead = pol.CheckFileAccess(ss.sub, s) == nil
	} else {
		cl.CanRead = true
	}
	ctx = catalog.WithClaimant(ctx, cl)
	if err := ss.e.opts.DDL.DropTable(ctx, wh, id, d.purge); err != nil {
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
			ss.e.log.ErrorContext(ctx, "sql: cannot remove the grants of a dropped table", "err", err)
		}
	}
	return []string{wh + "." + id.String()}, nil
}

func undefinedTable(path []string, err error) error {
	return &pgwire.Error{Code: pgwire.CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", strings.Join(path, ".")), Err: err}
}

// renameNames resolves the names of ALTER ... RENAME TO: the old name, and
// the new one (in the old name's schema unless it names one).
func (ss *session) renameNames(d *ddlParsed) (wh string, from, to catalog.Ident, err error) {
	wh, from, err = ss.tableName(d.path)
	if err != nil {
		return "", from, to, err
	}
	to = catalog.Ident{Namespace: from.Namespace, Name: d.newPath[len(d.newPath)-1]}
	if len(d.newPath) > 1 {
		wh2, id, err := ss.tableName(d.newPath)
		if err != nil {
			return "", from, to, err
		}
		if wh2 != wh {
			return "", from, to, unsupported("a table cannot move to another database")
		}
		to = id
	}
	return wh, from, to, nil
}

// renameErr maps a failed rename's error to the client's: gone (and no
// error) when the object was missing and IF EXISTS says to carry on.
func renameErr(d *ddlParsed, to catalog.Ident, err error) (bool, error) {
	switch floe.KindOf(err) {
	case floe.NotFound:
		if d.ifExists {
			return true, nil
		}
		return false, undefinedTable(d.path, err)
	case floe.AlreadyExists:
		return false, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", to.String()), Err: err}
	}
	return false, err
}

func (ss *session) renameTable(ctx context.Context, d *ddlParsed) ([]string, error) {
	wh, from, to, err := ss.renameNames(d)
	if err != nil {
		return nil, err
	}
	if k, err := catalogKind(ctx, ss.e.opts.DDL, wh, from); err == nil && k == catalog.KindView {
		// ALTER TABLE ... RENAME TO of a view, as dbt sends it.
		v := *d
		v.kind = ddlAlterView
		_, err := ss.runViewDDL(ctx, &v)
		return nil, err
	}
	src, dst := authz.Table(wh, from), authz.Table(wh, to)
	if err := ss.require(ctx, authz.Drop, src); err != nil {
		return nil, err
	}
	if err := ss.require(ctx, authz.CreateTable, authz.NamespaceOf(wh, to.Namespace)); err != nil {
		return nil, err
	}
	across := from.Namespace.Key() != to.Namespace.Key()
	if across {
		if err := ss.require(ctx, authz.Select, src); err != nil {
			return nil, err
		}
		if err := ss.require(ctx, authz.ManageGrants, src); err != nil {
			return nil, err
		}
	}
	if err := ss.e.opts.DDL.Rename(ctx, wh, from, to, catalog.KindTable); err != nil {
		gone, err := renameErr(d, to, err)
		if gone {
			return nil, nil
		}
		return nil, err
	}
	if g := ss.e.opts.Grants; g != nil {
		if _, err := g.MoveGrantsOn(ctx, src, dst); err != nil {
			ss.e.log.ErrorContext(ctx, "sql: cannot move the grants of a renamed table", "err", err)
		}
	}
	if across {
		ss.owned(ctx, dst)
	}
	return []string{wh + "." + from.String(), wh + "." + to.String()}, nil
}

// stageDDL stages a statement that changes one table in t and returns its
// command tag, the table and the tables it read (CREATE TABLE ... AS).
func (ss *session) stageDDL(ctx context.Context, t *txnState, d *ddlParsed) (tag, target string, read []string, err error) {
	wh, id, err := ss.tableName(d.path)
	if err != nil {
		return "", "", nil, err
	}
	target = wh + "." + id.String()
	if d.kind == ddlCreateTable {
		tag, read, err := ss.createTable(ctx, t, d, wh, id)
		return tag, target, read, err
	}
	if d.kind == ddlTruncate {
		if err := ss.authorizeWrite(ctx, wh, id, dmlDelete); err != nil {
			return "", "", nil, err
		}
	} else if err := ss.require(ctx, authz.Modify, authz.Table(wh, id)); err != nil {
		return "", "", nil, err
	}
	tbl, err := t.load(ctx, wh, id)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			if d.ifExists {
				return d.kind.String(), "", nil, nil
			}
			return "", "", nil, undefinedTable(d.path, err)
		}
		return "", "", nil, err
	}
	txn := tbl.NewTransaction()
	switch d.kind {
	case ddlTruncate:
		if tbl.CurrentSnapshot() != nil {
			props := iceberg.Properties{"floe.sql.statement": "TRUNCATE", "floe.sql.principal": ss.pg.Identity.Principal}
			if err := txn.Delete(ctx, iceberg.AlwaysTrue{}, props); err != nil {
				return "", "", nil, err
			}
		}
	case ddlComment:
		err = commentOn(txn, tbl, d)
	case ddlAlterTable:
		err = alterTable(txn, tbl, d)
	}
	if err != nil {
		return "", "", nil, err
	}
	if _, err := txn.Commit(ctx); err != nil {
		return "", "", nil, err
	}
	return d.kind.String(), target, nil, nil
}

// commentOn sets or removes a table's comment property or a column's doc.
func commentOn(txn *table.Transaction, tbl *table.Table, d *ddlParsed) error {
	if !d.commentsCol {
		if d.comment == nil {
			return txn.RemoveProperties([]string{"comment"})
		}
		return txn.SetProperties(iceberg.Properties{"comment": *d.comment})
	}
	f, err := findColumn(tbl, d.col)
	if err != nil {
		return err
	}
	doc := ""
	if d.comment != nil {
		doc = *d.comment
	}
	return schemaError(txn.UpdateSchema(true, false).UpdateColumn([]string{f.Name}, table.ColumnUpdate{Doc: iceberg.Optional[string]{Val: doc, Valid: true}}).Commit())
}

// findColumn finds a top-level column by name (exact, else ignoring case).
func findColumn(tbl *table.Table, name string) (iceberg.NestedField, error) {
	var found *iceberg.NestedField
	for _, f := range tbl.Schema().Fields() {
		if f.Name == name {
			return f, nil
		}
		if strings.EqualFold(f.Name, name) && found == nil {
			found = &f
		}
	}
	if found != nil {
		return *found, nil
	}
	return iceberg.NestedField{}, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %s does not exist", name, strings.Join(tbl.Identifier(), "."))}
}

// schemaError turns iceberg-go's schema evolution errors into the
// client's.
func schemaError(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return err
	}
	return &pgwire.Error{Code: "42804", Message: "invalid schema change: " + err.Error(), Err: err}
}

// alterTable stages one ALTER TABLE action in txn.
func alterTable(txn *table.Transaction, tbl *table.Table, d *ddlParsed) error {
	switch d.alter {
	case alterAddColumn:
		c := d.cols[0]
		if _, err := findColumn(tbl, c.name); err == nil {
			if d.ifExists {
				return nil
			}
			return &pgwire.Error{Code: "42701", Message: fmt.Sprintf("column %q of relation %s already exists", c.name, strings.Join(tbl.Identifier(), "."))}
		}
		if c.required {
			return unsupported("ADD COLUMN ... NOT NULL is not supported: the table's existing rows have no value for it")
		}
		return schemaError(txn.UpdateSchema(true, false).AddColumn([]string{c.name}, c.typ, c.doc, false, nil).Commit())
	case alterDropColumn:
		f, err := findColumn(tbl, d.col)
		if err != nil {
			if d.ifExists {
				return nil
			}
			return err
		}
		return schemaError(txn.UpdateSchema(true, false).DeleteColumn([]string{f.Name}).Commit())
	case alterRenameColumn:
		f, err := findColumn(tbl, d.col)
		if err != nil {
			return err
		}
		return schemaError(txn.UpdateSchema(true, false).RenameColumn([]string{f.Name}, d.newName).Commit())
	case alterColumnType:
		f, err := findColumn(tbl, d.col)
		if err != nil {
			return err
		}
		to := d.cols[0].typ
		if f.Type.Equals(to) {
			return nil
		}
		if !widens(f.Type, to) {
			return &pgwire.Error{Code: "42804", Message: fmt.Sprintf("cannot change column %q from %s to %s: Iceberg only widens int to bigint, real to double and a decimal's precision (same scale)", f.Name, f.Type, to)}
		}
		return schemaError(txn.UpdateSchema(true, false).UpdateColumn([]string{f.Name}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: to, Valid: true}}).Commit())
	case alterDropNotNull:
		f, err := findColumn(tbl, d.col)
		if err != nil {
			return err
		}
		return schemaError(txn.UpdateSchema(true, false).UpdateColumn([]string{f.Name}, table.ColumnUpdate{Required: iceberg.Optional[bool]{Val: false, Valid: true}}).Commit())
	case alterSetProps:
		return txn.SetProperties(d.props)
	case alterResetProps:
		return txn.RemoveProperties(d.keys)
	case alterAddPartition:
		f := d.parts[0]
		col, err := findColumn(tbl, f.col)
		if err != nil {
			return err
		}
		return schemaError(txn.UpdateSpec(true).AddField(col.Name, f.transform, f.name).Commit())
	case alterDropPartition:
		name := d.partName
		if name == "" {
			f := d.parts[0]
			col, err := findColumn(tbl, f.col)
			if err != nil {
				return err
			}
			spec := tbl.Spec()
			for _, pf := range spec.Fields() {
				if pf.SourceID() == col.ID && pf.Transform.Equals(f.transform) {
					name = pf.Name
				}
			}
			if name == "" {
				return &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: fmt.Sprintf("the table is not partitioned by %s(%s)", f.transform, f.col)}
			}
		}
		return schemaError(txn.UpdateSpec(true).RemoveField(name).Commit())
	}
	return unsupported("this ALTER TABLE action is not supported")
}

// widens reports whether Iceberg may promote from to to.
func widens(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	}
	return false
}

// createTable stages CREATE TABLE, CREATE OR REPLACE TABLE and CREATE
// TABLE ... AS.
func (ss *session) createTable(ctx context.Context, t *txnState, d *ddlParsed, wh string, id catalog.Ident) (string, []string, error) {
	if err := ss.require(ctx, authz.CreateTable, authz.NamespaceOf(wh, id.Namespace)); err != nil {
		return "", nil, err
	}
	exists, err := t.exists(ctx, wh, id)
	if err != nil {
		return "", nil, err
	}
	if exists {
		if d.ifExists {
			return "CREATE TABLE", nil, nil
		}
		if !d.orReplace {
			return "", nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", id.String())}
		}
		if err := ss.require(ctx, authz.Modify, authz.Table(wh, id)); err != nil {
			return "", nil, err
		}
	}
	var (
		fields []iceberg.NestedField
		sel    *selectStmt
	)
	if d.query != "" {
		var err error
		if sel, err = ss.prepareSelect(ctx, d.query, nil); err != nil {
			return "", nil, err
		}
		defer sel.Close()
		if fields, err = queryFields(sel, d.colNames); err != nil {
			return "", nil, err
		}
	} else {
		for i, c := range d.cols {
			fields = append(fields, iceberg.NestedField{ID: i + 1, Name: c.name, Type: c.typ, Required: c.required, Doc: c.doc})
		}
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[strings.ToLower(f.Name)] {
			return "", nil, &pgwire.Error{Code: "42701", Message: fmt.Sprintf("column %q specified more than once", f.Name)}
		}
		seen[strings.ToLower(f.Name)] = true
	}
	sc := iceberg.NewSchema(0, fields...)
	if exists {
		if err := ss.replaceTable(ctx, t, d, wh, id, sc); err != nil {
			return "", nil, err
		}
	} else if err := ss.stageCreate(ctx, t, d, wh, id, sc); err != nil {
		return "", nil, err
	}
	if sel == nil {
		return "CREATE TABLE", nil, nil
	}
	// The rows: an INSERT of the query into the staged table, through the
	// same checked query path and writer as any INSERT.
	names := make([]string, 0, 3)
	for _, p := range d.path {
		names = append(names, quoteIdent(p))
	}
	ins, err := parseDML("INSERT INTO " + strings.Join(names, ".") + " " + d.query)
	if err != nil {
		return "", nil, err
	}
	ist := &dmlStmt{ss: ss, text: d.query, d: ins}
	out, err := ist.run(ctx, nil)
	if err != nil {
		if out != nil {
			return "", out.tables, err
		}
		return "", nil, err
	}
	return fmt.Sprintf("SELECT %d", out.rows), out.tables, nil
}

// queryFields derives the columns of a CREATE TABLE ... AS from its query.
func queryFields(sel *selectStmt, names []string) ([]iceberg.NestedField, error) {
	n := len(sel.cols)
	if names != nil && len(names) > n {
		return nil, syntaxError("CREATE TABLE AS specifies too many column names")
	}
	fields := make([]iceberg.NestedField, n)
	for i := range n {
		name := sel.cols[i].Name
		if i < len(names) {
			name = names[i]
		}
		ti, err := sel.stmt.ColumnTypeInfo(i)
		if err != nil {
			return nil, err
		}
		typ, err := icebergOfDuck(ti)
		if err != nil {
			return nil, &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: fmt.Sprintf("column %q: %s", name, floe.PublicMessage(err))}
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: name, Type: typ}
	}
	return fields, nil
}

// icebergOfDuck maps a DuckDB result type to an Iceberg type.
func icebergOfDuck(ti duckdb.TypeInfo) (iceberg.Type, error) {
	switch ti.InternalType() {
	case duckdb.TYPE_BOOLEAN:
		return iceberg.PrimitiveTypes.Bool, nil
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT:
		return iceberg.PrimitiveTypes.Int32, nil
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UINTEGER:
		return iceberg.PrimitiveTypes.Int64, nil
	case duckdb.TYPE_HUGEINT, duckdb.TYPE_UBIGINT:
		return iceberg.DecimalTypeOf(38, 0), nil
	case duckdb.TYPE_FLOAT:
		return iceberg.PrimitiveTypes.Float32, nil
	case duckdb.TYPE_DOUBLE:
		return iceberg.PrimitiveTypes.Float64, nil
	case duckdb.TYPE_DECIMAL:
		dd, ok := ti.Details().(*duckdb.DecimalDetails)
		if !ok {
			return iceberg.DecimalTypeOf(38, 9), nil
		}
		return iceberg.DecimalTypeOf(int(dd.Width), int(dd.Scale)), nil
	case duckdb.TYPE_VARCHAR:
		if ti.Alias() != "" {
			break
		}
		return iceberg.PrimitiveTypes.String, nil
	case duckdb.TYPE_DATE:
		return iceberg.PrimitiveTypes.Date, nil
	case duckdb.TYPE_TIME:
		return iceberg.PrimitiveTypes.Time, nil
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS:
		return iceberg.PrimitiveTypes.Timestamp, nil
	case duckdb.TYPE_TIMESTAMP_TZ:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case duckdb.TYPE_BLOB:
		return iceberg.PrimitiveTypes.Binary, nil
	case duckdb.TYPE_UUID:
		return iceberg.PrimitiveTypes.UUID, nil
	}
	return nil, floe.E(floe.Unsupported, "", "type %s is not supported in Iceberg tables created through SQL; CAST it", duckTypeName(ti))
}

func duckTypeName(ti duckdb.TypeInfo) string {
	if a := ti.Alias(); a != "" {
		return a
	}
	return fmt.Sprint(ti.InternalType())
}

// partitionSpec builds the spec of PARTITIONED BY over sc; the fields
// are numbered from firstID.
func partitionSpec(sc *iceberg.Schema, parts []partField, specID, firstID int) (*iceberg.PartitionSpec, error) {
	opts := []iceberg.PartitionOption{iceberg.WithSpecID(specID)}
	for i, p := range parts {
		f, ok := sc.FindFieldByNameCaseInsensitive(p.col)
		if !ok {
			return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("partition column %q does not exist", p.col)}
		}
		name := p.name
		if name == "" {
			name = defaultPartitionName(f.Name, p.transform)
		}
		id := firstID + i
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(f.ID, name, p.transform, sc, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return nil, &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: "invalid PARTITIONED BY: " + err.Error(), Err: err}
	}
	return &spec, nil
}

// defaultPartitionName names a partition field as Spark and Trino do.
func defaultPartitionName(col string, t iceberg.Transform) string {
	switch tr := t.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.BucketTransform:
		return col + "_bucket"
	case iceberg.TruncateTransform:
		return col + "_trunc"
	case iceberg.YearTransform:
		return col + "_year"
	case iceberg.MonthTransform:
		return col + "_month"
	case iceberg.DayTransform:
		return col + "_day"
	case iceberg.HourTransform:
		return col + "_hour"
	default:
		return col + "_" + tr.String()
	}
}

// stageCreate stages a new table: the catalog lays out its first metadata
// (location, fresh ids) without creating it, and the transaction's commit
// creates it (an assert-create commit, as a REST client's staged create).
func (ss *session) stageCreate(ctx context.Context, t *txnState, d *ddlParsed, wh string, id catalog.Ident, sc *iceberg.Schema) error {
	fs, ok := ss.e.opts.Tables.(fileSystem)
	if !ok {
		return unsupported("CREATE TABLE is not available on this SQL endpoint")
	}
	spec, err := partitionSpec(sc, d.parts, 0, iceberg.PartitionDataIDStart)
	if err != nil {
		return err
	}
	props := map[string]string{}
	for k, v := range d.props {
		props[k] = v
	}
	ts, err := ss.e.opts.DDL.CreateTable(ctx, wh, id.Namespace, catalog.CreateTableRequest{Name: id.Name, Schema: sc, Spec: spec, Properties: props, Stage: true})
	if err != nil {
		if floe.KindOf(err) == floe.NotFound && floe.EntityOf(err) == "namespace" {
			return &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", id.Namespace.String()), Err: err}
		}
		return err
	}
	md := ts.Metadata
	if err := t.count(); err != nil {
		return err
	}
	cur := md.CurrentSchema()
	pspec := md.PartitionSpec()
	order := md.SortOrder()
	updates := []table.Update{
		table.NewAssignUUIDUpdate(md.TableUUID()),
		table.NewUpgradeFormatVersionUpdate(md.Version()),
		table.NewAddSchemaUpdate(cur),
		table.NewSetCurrentSchemaUpdate(-1),
		table.NewAddPartitionSpecUpdate(&pspec, true),
		table.NewSetDefaultSpecUpdate(-1),
		table.NewAddSortOrderUpdate(&order),
		table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetLocationUpdate(md.Location()),
		table.NewSetPropertiesUpdate(md.Properties()),
	}
	fsys := fs.FS()
	st := &stagedTable{wh: wh, id: id, created: true, meta: md, reqs: []table.Requirement{table.AssertCreate()}, updates: updates,
		fsF: func(context.Context) (icebergio.IO, error) { return fsys, nil }}
	if err := t.roomForTable(); err != nil {
		return err
	}
	t.add(st)
	delete(t.gone, txnKey(wh, id))
	return nil
}

// replaceTable stages CREATE OR REPLACE of an existing table, as Iceberg's
// replace-table transaction: a new current schema (with fresh field ids)
// and partition spec, the properties given added, and no current snapshot;
// the table keeps its identity, location and history.
func (ss *session) replaceTable(ctx context.Context, t *txnState, d *ddlParsed, wh string, id catalog.Ident, sc *iceberg.Schema) error {
	st, err := t.entry(ctx, wh, id)
	if err != nil {
		return err
	}
	md := st.meta
	next := md.LastColumnID()
	fresh, err := iceberg.AssignFreshSchemaIDs(sc, func() int { next++; return next })
	if err != nil {
		return &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: "invalid table definition: " + err.Error(), Err: err}
	}
	specID := 0
	for _, s := range md.PartitionSpecs() {
		specID = max(specID, s.ID()+1)
	}
	spec, err := partitionSpec(fresh, d.parts, specID, derefInt(md.LastPartitionSpecID())+1)
	if err != nil {
		return err
	}
	updates := []table.Update{
		table.NewAddSchemaUpdate(fresh),
		table.NewSetCurrentSchemaUpdate(-1),
		table.NewAddPartitionSpecUpdate(spec, false),
		table.NewSetDefaultSpecUpdate(-1),
	}
	if md.CurrentSnapshot() != nil {
		updates = append(updates, table.NewRemoveSnapshotRefUpdate(table.MainBranch))
	}
	if len(d.props) > 0 {
		updates = append(updates, table.NewSetPropertiesUpdate(d.props))
	}
	return t.stage(st, nil, updates)
}
