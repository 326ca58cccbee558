package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Renames and drops inside a transaction block. The block keeps its own
// view of the names: a table renamed or dropped is gone under its old
// name (gone), a renamed table the block has not changed is found under
// its new name through alias, and a table the block created or changed
// is re-keyed under its new name. A rename or drop of a table the block
// created changes only the staged state (the table does not exist in the
// catalog yet); one of an existing table is an op committed with the
// block's table commits in one metadata-store transaction
// (catalog.CommitTransactionOps): the table commits under the names the
// tables had, then the ops in order, then the creates under their final
// names. The grants move or go after the commit, in the order of the ops,
// as they do for a rename or drop outside a block.

// txnOp is one rename or drop of a table that exists in the catalog.
type txnOp struct {
	wh string
	op catalog.EntityOp
}

// stagedView is a view the transaction created: its metadata is written,
// the catalog creates it at COMMIT.
type stagedView struct {
	wh  string
	id  catalog.Ident
	sql string
	loc string // its metadata (catalog.StageView)
}

// exists reports whether the name id is taken, as the transaction sees it.
func (t *txnState) exists(ctx context.Context, wh string, id catalog.Ident) (bool, error) {
	k, err := t.kind(ctx, wh, id)
	return k != "", err
}

// view returns the view the transaction created named id, or nil.
func (t *txnState) view(wh string, id catalog.Ident) *stagedView {
	key := txnKey(wh, id)
	for _, v := range t.views {
		if txnKey(v.wh, v.id) == key {
			return v
		}
	}
	return nil
}

// kind returns what the name id is as the transaction sees it, with the
// catalog's name of it: a table, a view or nothing ("").
func (t *txnState) kind(ctx context.Context, wh string, id catalog.Ident) (catalog.Kind, error) {
	key := txnKey(wh, id)
	if _, ok := t.tables[key]; ok {
		return catalog.KindTable, nil
	}
	if t.view(wh, id) != nil {
		return catalog.KindView, nil
	}
	if t.gone[key] {
		return "", nil
	}
	orig := id
	if a, ok := t.alias[key]; ok {
		orig = a
	}
	return catalogKind(ctx, t.ss.e.opts.DDL, wh, orig)
}

// catalogKind returns the kind of the catalog's entity named id, or "".
func catalogKind(ctx context.Context, c DDLCatalog, wh string, id catalog.Ident) (catalog.Kind, error) {
	for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
		ok, err := c.Exists(ctx, wh, id, k)
		if err != nil || ok {
			if err != nil {
				return "", err
			}
			return k, nil
		}
	}
	return "", nil
}

// unstage forgets a staged table (renamed away or dropped).
func (t *txnState) unstage(st *stagedTable) {
	delete(t.tables, txnKey(st.wh, st.id))
	t.order = slices.DeleteFunc(t.order, func(o *stagedTable) bool { return o == st })
}

// entityOps returns the ops to commit.
func (t *txnState) entityOps() []catalog.EntityOp {
	out := make([]catalog.EntityOp, 0, len(t.ops)+len(t.views))
	for _, o := range t.ops {
		out = append(out, o.op)
	}
	for _, v := range t.views {
		out = append(out, catalog.EntityOp{Kind: catalog.KindView, Ident: v.id, CreateAt: v.loc})
	}
	return out
}

// roomForOp fails when the block holds as many staged changes as it may.
func (t *txnState) roomForOp() error {
	if len(t.ops)+len(t.order)+len(t.views) >= t.max {
		return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("a transaction may change at most %d tables (sql_max_transaction_statements); commit in smaller transactions", t.max)}
	}
	return nil
}

// commitCatalog commits table commits and ops in one catalog transaction.
func (ss *session) commitCatalog(ctx context.Context, wh string, commits []catalog.TableCommit, ops []catalog.EntityOp) error {
	if len(ops) == 0 {
		return ss.e.opts.DDL.CommitTransaction(ctx, wh, commits)
	}
	oc, ok := ss.e.opts.DDL.(interface {
		CommitTransactionOps(ctx context.Context, wh string, commits []catalog.TableCommit, ops []catalog.EntityOp) error
	})
	if !ok {
		return unsupported("renames and drops inside a transaction block are not available on this SQL endpoint")
	}
	err := oc.CommitTransactionOps(ctx, wh, commits, ops)
	switch floe.KindOf(err) {
	case floe.NotFound:
		return &pgwire.Error{Code: pgwire.CodeSerializationFailure,
			Message: "could not commit the transaction: a table it renames or drops was renamed or dropped concurrently; nothing was committed", Err: err}
	case floe.AlreadyExists:
		return &pgwire.Error{Code: pgwire.CodeDuplicateTable,
			Message: "could not commit the transaction: a name it renames a table to was taken concurrently; nothing was committed", Err: err}
	}
	return err
}

// afterOps keeps the grants in step with the committed ops and returns
// the tables they wrote.
func (ss *session) afterOps(ctx context.Context, t *txnState) []string {
	var written []string
	g := ss.e.opts.Grants
	for _, o := range t.ops {
		sec := authz.Table
		if o.op.Kind == catalog.KindView {
			sec = authz.View
		}
		from := sec(o.wh, o.op.Ident)
		written = append(written, o.wh+"."+o.op.Ident.String())
		if o.op.RenameTo != nil {
			written = append(written, o.wh+"."+o.op.RenameTo.String())
			if g != nil {
				if _, err := g.MoveGrantsOn(ctx, from, sec(o.wh, *o.op.RenameTo)); err != nil {
					ss.e.log.ErrorContext(ctx, "sql: cannot move the grants of a renamed table", "err", err)
				}
			}
			continue
		}
		if g != nil {
			if _, err := g.DeleteGrantsOn(ctx, from); err != nil {
				ss.e.log.ErrorContext(ctx, "sql: cannot remove the grants of a dropped table", "err", err)
			}
		}
	}
	return written
}

// renameInBlock stages ALTER TABLE ... RENAME TO.
func (ss *session) renameInBlock(ctx context.Context, t *txnState, d *ddlParsed) ([]string, error) {
	wh, from, to, err := ss.renameNames(d)
	if err != nil {
		return nil, err
	}
	if from.Namespace.Key() != to.Namespace.Key() {
		return nil, notInBlock("ALTER TABLE ... RENAME TO another schema")
	}
	if err := to.Validate(); err != nil {
		return nil, err
	}
	if err := ss.require(ctx, authz.Drop, authz.Table(wh, from)); err != nil {
		return nil, err
	}
	if err := ss.require(ctx, authz.CreateTable, authz.NamespaceOf(wh, to.Namespace)); err != nil {
		return nil, err
	}
	st, err := t.entry(ctx, wh, from)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			if k, kerr := t.kind(ctx, wh, from); kerr == nil && k == catalog.KindView {
				return ss.renameViewInBlock(ctx, t, wh, from, to)
			}
			if d.ifExists {
				return nil, nil
			}
			return nil, undefinedTable(d.path, err)
		}
		return nil, err
	}
	taken, err := t.exists(ctx, wh, to)
	if err != nil {
		return nil, err
	}
	if taken {
		return nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", to.String())}
	}
	fromKey, toKey := txnKey(wh, from), txnKey(wh, to)
	staged := t.tables[fromKey] == st
	if !st.created {
		if err := t.roomForOp(); err != nil {
			return nil, err
		}
		next := to
		t.ops = append(t.ops, txnOp{wh: wh, op: catalog.EntityOp{Kind: catalog.KindTable, Ident: from, RenameTo: &next}})
		t.gone[fromKey] = true
		if !staged {
			t.alias[toKey] = st.orig
		}
		delete(t.alias, fromKey)
	} else if st.createdAs == nil {
		first := st.id
		st.createdAs = &first
	}
	if staged {
		delete(t.tables, fromKey)
		st.id = to
		t.tables[toKey] = st
	}
	delete(t.gone, toKey)
	return []string{wh + "." + from.String(), wh + "." + to.String()}, nil
}

// dropInBlock stages DROP TABLE.
func (ss *session) dropInBlock(ctx context.Context, t *txnState, d *ddlParsed) ([]string, error) {
	if d.purge {
		return nil, notInBlock("DROP TABLE ... PURGE")
	}
	wh, id, err := ss.tableName(d.path)
	if err != nil {
		return nil, err
	}
	s := authz.Table(wh, id)
	if err := ss.require(ctx, authz.Drop, s); err != nil {
		return nil, err
	}
	st, err := t.entry(ctx, wh, id)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			if d.ifExists {
				return nil, nil
			}
			return nil, undefinedTable(d.path, err)
		}
		return nil, err
	}
	key := txnKey(wh, id)
	if !st.created {
		if err := t.roomForOp(); err != nil {
			return nil, err
		}
		by := catalog.ClaimantOf(ctx)
		by.CanRead = ss.unrestricted
		if !ss.unrestricted {
			pol, err := ss.e.opts.Policies.Policy(ctx)
			if err != nil {
				return nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
			}
			by.CanRead = pol.CheckFileAccess(ss.sub, s) == nil
		}
		t.ops = append(t.ops, txnOp{wh: wh, op: catalog.EntityOp{Kind: catalog.KindTable, Ident: id, By: &by}})
	}
	if t.tables[key] == st {
		t.unstage(st)
	}
	delete(t.alias, key)
	t.gone[key] = true
	return []string{wh + "." + id.String()}, nil
}

// renameViewInBlock stages a rename of view from (ALTER VIEW, or ALTER
// TABLE as dbt sends it).
func (ss *session) renameViewInBlock(ctx context.Context, t *txnState, wh string, from, to catalog.Ident) ([]string, error) {
	if v := t.view(wh, from); v == nil {
		if err := ss.require(ctx, authz.Drop, authz.View(wh, t.catalogName(wh, from))); err != nil {
			return nil, err
		}
	}
	if err := ss.require(ctx, authz.CreateView, authz.NamespaceOf(wh, to.Namespace)); err != nil {
		return nil, err
	}
	taken, err := t.exists(ctx, wh, to)
	if err != nil {
		return nil, err
	}
	if taken {
		return nil, &pgwire.Error{Code: pgwire.CodeDuplicateTable, Message: fmt.Sprintf("relation %q already exists", to.String())}
	}
	fromKey, toKey := txnKey(wh, from), txnKey(wh, to)
	if v := t.view(wh, from); v != nil {
		v.id = to
	} else {
		if err := t.roomForOp(); err != nil {
			return nil, err
		}
		next := to
		t.ops = append(t.ops, txnOp{wh: wh, op: catalog.EntityOp{Kind: catalog.KindView, Ident: from, RenameTo: &next}})
		t.alias[toKey] = t.catalogName(wh, from)
		delete(t.alias, fromKey)
		t.gone[fromKey] = true
	}
	delete(t.gone, toKey)
	return []string{wh + "." + from.String(), wh + "." + to.String()}, nil
}

// catalogName returns the name the catalog has for what the transaction
// names id.
func (t *txnState) catalogName(wh string, id catalog.Ident) catalog.Ident {
	if a, ok := t.alias[txnKey(wh, id)]; ok {
		return a
	}
	return id
}

// dropViewInBlock stages DROP VIEW.
func (ss *session) dropViewInBlock(ctx context.Context, t *txnState, wh string, id catalog.Ident, ifExists bool, path []string) error {
	key := txnKey(wh, id)
	if v := t.view(wh, id); v != nil {
		t.views = slices.DeleteFunc(t.views, func(o *stagedView) bool { return o == v })
		t.gone[key] = true
		return nil
	}
	k, err := t.kind(ctx, wh, id)
	if err != nil {
		return err
	}
	if k != catalog.KindView {
		if ifExists {
			return nil
		}
		return undefinedTable(path, floe.E(floe.NotFound, "view", "View does not exist: %s", id))
	}
	if err := ss.require(ctx, authz.Drop, authz.View(wh, t.catalogName(wh, id))); err != nil {
		return err
	}
	if err := t.roomForOp(); err != nil {
		return err
	}
	t.ops = append(t.ops, txnOp{wh: wh, op: catalog.EntityOp{Kind: catalog.KindView, Ident: id}})
	delete(t.alias, key)
	t.gone[key] = true
	return nil
}
