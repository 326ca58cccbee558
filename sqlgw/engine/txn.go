package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// A transaction block (BEGIN ... COMMIT) stages its statements' table
// changes in the session: each DML or DDL statement that changes a table
// runs as usual (data files are written), but its Iceberg commit —
// requirements and updates — goes to the session's txnState instead of the
// catalog, which applies the updates to the table's staged metadata. Later
// statements of the block read and change the staged metadata, so they see
// the block's own writes. COMMIT sends every staged table's updates to the
// catalog as one multi-table commit (catalog.CommitTransaction, the REST
// catalog's transactions/commit), fenced by each table's state when the
// block first read it: all tables change, or none. ROLLBACK drops the
// staged state. A DDL statement outside a block runs the same way in a
// block of its own.

// DefaultMaxTxnStatements is the default of Options.MaxTxnStatements.
const DefaultMaxTxnStatements = 1000

// txnState is the staged state of one transaction block.
type txnState struct {
	ss      *session
	max     int // staged table commits allowed
	commits int // staged table commits so far
	tables  map[string]*stagedTable
	order   []*stagedTable
	// Renames and drops of the block, in order (see txnops.go).
	gone  map[string]bool          // names renamed away or dropped
	alias map[string]catalog.Ident // a renamed table's or view's name -> its catalog name
	ops   []txnOp
	views []*stagedView // views created, by their current names
	// schemas the block created at once; dropped again unless it commits.
	schemas []createdSchema
}

// stagedTable is one table as the transaction sees it.
type stagedTable struct {
	wh   string
	id   catalog.Ident // the name in the transaction
	orig catalog.Ident // the catalog's name (of a table not created)
	// createdAs is the name a created table was laid out under, once it
	// was renamed in the transaction.
	createdAs *catalog.Ident
	created   bool           // created by the transaction
	base      table.Metadata // the catalog's metadata when first read (nil when created)
	meta      table.Metadata // as staged
	metaLoc   string         // the catalog's metadata location ("" when created)
	fsF       table.FSysF
	reqs      []table.Requirement // of a create or replace
	updates   []table.Update
}

func newTxn(ss *session) *txnState {
	max := ss.e.opts.MaxTxnStatements
	if max <= 0 {
		max = DefaultMaxTxnStatements
	}
	return &txnState{ss: ss, max: max, tables: map[string]*stagedTable{}, gone: map[string]bool{}, alias: map[string]catalog.Ident{}}
}

func txnKey(wh string, id catalog.Ident) string {
	return wh + "\x00" + id.Namespace.Key() + "\x00" + id.Name
}

// createdHere reports whether the transaction created table id; its
// creator holds the owner's privileges on it once it commits.
func (ss *session) createdHere(wh string, id catalog.Ident) bool {
	if ss.txn == nil {
		return false
	}
	st := ss.txn.tables[txnKey(wh, id)]
	return st != nil && st.created
}

// loadTable opens a table: as the session's transaction sees it when one
// is open, else at the catalog's current metadata.
func (ss *session) loadTable(ctx context.Context, wh string, id catalog.Ident) (*table.Table, error) {
	if ss.e.isForeign(wh) {
		// Reads of foreign tables load them in resolve, after the
		// privilege check; every other use is a change.
		return nil, readOnlyForeign(wh)
	}
	if ss.txn == nil {
		return ss.e.opts.Tables.LoadTable(ctx, wh, id)
	}
	return ss.txn.load(ctx, wh, id)
}

func (t *txnState) load(ctx context.Context, wh string, id catalog.Ident) (*table.Table, error) {
	st, err := t.entry(ctx, wh, id)
	if err != nil {
		return nil, err
	}
	return st.table(t), nil
}

// entry returns a table as the transaction sees it: as staged once the
// transaction changed it, else at the catalog's current metadata (read
// committed, as PostgreSQL's default; such an entry is kept only when a
// change is staged on it, and its metadata then fences the commit).
func (t *txnState) entry(ctx context.Context, wh string, id catalog.Ident) (*stagedTable, error) {
	key := txnKey(wh, id)
	if st, ok := t.tables[key]; ok {
		return st, nil
	}
	if t.gone[key] {
		return nil, floe.E(floe.NotFound, "table", "Table does not exist: %s (renamed or dropped in this transaction)", id)
	}
	orig := id
	if a, ok := t.alias[key]; ok {
		orig = a
	}
	tbl, err := t.ss.e.opts.Tables.LoadTable(ctx, wh, orig)
	if err != nil {
		return nil, err
	}
	return &stagedTable{wh: wh, id: id, orig: orig, base: tbl.Metadata(), meta: tbl.Metadata(), metaLoc: tbl.MetadataLocation(), fsF: tbl.FS}, nil
}

// roomForTable fails when the transaction changes as many tables as it
// may stage changes (each changed table's metadata is kept until it ends).
func (t *txnState) roomForTable() error {
	if len(t.order) >= t.max {
		return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("a transaction may change at most %d tables (sql_max_transaction_statements); commit in smaller transactions", t.max)}
	}
	return nil
}

func (t *txnState) add(st *stagedTable) {
	t.tables[txnKey(st.wh, st.id)] = st
	t.order = append(t.order, st)
}

// table returns the staged table as an iceberg-go table whose commits
// stage.
func (st *stagedTable) table(t *txnState) *table.Table {
	ident := append(slices.Clone([]string(st.id.Namespace)), st.id.Name)
	return table.New(ident, st.meta, st.metaLoc, st.fsF, stager{t: t, st: st})
}

// count counts one staged statement against the limit.
func (t *txnState) count() error {
	if t.commits >= t.max {
		return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("a transaction may stage at most %d table changes (sql_max_transaction_statements); commit in smaller transactions", t.max)}
	}
	t.commits++
	return nil
}

// stage applies updates to a staged table's metadata.
func (t *txnState) stage(st *stagedTable, reqs []table.Requirement, updates []table.Update) error {
	for _, r := range reqs {
		if err := r.Validate(st.meta); err != nil {
			return fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
	}
	key := txnKey(st.wh, st.id)
	held, ok := t.tables[key]
	if ok && held != st {
		// Staged meanwhile through another handle of the same table.
		return fmt.Errorf("%w: the table was changed earlier in the transaction", table.ErrCommitFailed)
	}
	if !ok {
		if err := t.roomForTable(); err != nil {
			return err
		}
	}
	if err := t.count(); err != nil {
		return err
	}
	md, err := applyUpdates(st.meta, st.metaLoc, updates)
	if err != nil {
		return err
	}
	st.meta = md
	st.updates = append(st.updates, updates...)
	if !ok {
		t.add(st)
	}
	return nil
}

// applyUpdates returns md with updates applied.
func applyUpdates(md table.Metadata, loc string, updates []table.Update) (out table.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, "table", "invalid table change: %v", r)
		}
	}()
	b, err := table.MetadataBuilderFromBase(md, loc)
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "invalid table change: %s", err)
		}
	}
	return b.Build()
}

// stager is the table.CatalogIO of a staged table: commits stage.
type stager struct {
	t  *txnState
	st *stagedTable
}

// LoadTable implements table.CatalogIO: the table as staged.
func (s stager) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return s.st.table(s.t), nil
}

// CommitTable implements table.CatalogIO: the updates are staged.
func (s stager) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if err := s.t.stage(s.st, reqs, updates); err != nil {
		return nil, "", err
	}
	return s.st.meta, s.st.metaLoc, nil
}

// fenced returns the requirements a staged change of an existing table is
// committed with: the table is as the transaction first read it.
func (st *stagedTable) fenced() []table.Requirement {
	b := st.base
	reqs := []table.Requirement{table.AssertTableUUID(b.TableUUID())}
	var snap *int64
	if s := b.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		snap = &id
	}
	reqs = append(reqs, table.AssertRefSnapshotID(table.MainBranch, snap),
		table.AssertCurrentSchemaID(b.CurrentSchema().ID), table.AssertLastAssignedFieldID(b.LastColumnID()),
		table.AssertDefaultSpecID(b.DefaultPartitionSpec()), table.AssertLastAssignedPartitionID(derefInt(b.LastPartitionSpecID())))
	return reqs
}

func derefInt(p *int) int {
	if p == nil {
		return iceberg.PartitionDataIDStart - 1
	}
	return *p
}

// commitTxn commits the staged changes as one multi-table commit and
// then grants the creator the owner's privileges on the tables it created.
// It returns the tables written.
func (ss *session) commitTxn(ctx context.Context, t *txnState) ([]string, error) {
	var (
		commits []catalog.TableCommit
		written []string
		created []*stagedTable
		wh      string
	)
	for _, st := range t.order {
		if len(st.updates) == 0 {
			continue
		}
		if wh != "" && st.wh != wh {
			return nil, unsupported("a transaction may change tables of one database (warehouse) only")
		}
		wh = st.wh
		reqs := st.reqs
		if reqs == nil {
			reqs = st.fenced()
		}
		name := st.id
		if !st.created {
			name = st.orig // renames apply after the table commits
		}
		commits = append(commits, catalog.TableCommit{Ident: name, Requirements: reqs, Updates: st.updates, CreatedAs: st.createdAs})
		written = append(written, st.wh+"."+st.id.String())
		if st.created {
			created = append(created, st)
		}
	}
	ops := t.entityOps()
	if len(commits) == 0 && len(ops) == 0 {
		return written, nil
	}
	if wh == "" {
		wh = ss.e.opts.Warehouse // the only one names resolve to
	}
	for _, tc := range commits {
		// The catalog keeps the committed metadata: it must not hold the
		// staging transactions' builders through the snapshots' pointers.
		lake.DetachSnapshots(tc.Updates)
	}
	if err := ss.commitCatalog(ctx, wh, commits, ops); err != nil {
		if floe.KindOf(err) == floe.Conflict {
			return nil, &pgwire.Error{Code: pgwire.CodeSerializationFailure,
				Message: "could not commit the transaction: a table it changes was changed concurrently; nothing was committed, run it again", Err: err}
		}
		return nil, err
	}
	written = append(written, ss.afterOps(ctx, t)...)
	for _, v := range t.views {
		ss.owned(ctx, authz.View(v.wh, v.id))
	}
	for _, st := range created {
		ss.owned(ctx, authz.Table(st.wh, st.id))
	}
	return written, nil
}

// commitBlock commits a transaction block at COMMIT and records it.
func (ss *session) commitBlock(ctx context.Context, t *txnState) error {
	ctx = catalog.WithClaimant(ctx, catalog.Claimant{Principal: ss.sub.PrincipalID, Admin: ss.unrestricted})
	written, err := ss.commitTxn(ctx, t)
	if ss.e.opts.Audit != nil && (err != nil || len(written) > 0) {
		if written == nil {
			written = []string{}
		}
		ss.emitAudit(ctx, map[string]any{"sql": "COMMIT", "statement": "COMMIT", "tables": []string{}, "written": written,
			"session": ss.pg.ID, "changes": t.commits}, err)
	}
	if err != nil {
		ss.undoSchemas(ctx, t)
		return ss.publicError(err, false)
	}
	return nil
}
