package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/store/backup"
)

// BackupOptions configures Backup.
type BackupOptions struct {
	// FloeVersion is recorded in the header (the binary's version).
	FloeVersion string
}

// Backup writes a consistent snapshot of every table of the store to w in
// the format of package backup: one read transaction (a WAL read snapshot
// on SQLite, REPEATABLE READ READ ONLY on PostgreSQL), so writers on this
// and other nodes go on while it runs and the file shows the store as of
// one instant. Secrets are copied as stored: hashed or sealed under the key
// wrapper, never unwrapped. It returns the header and trailer written.
func (s *Store) Backup(ctx context.Context, w io.Writer, opts BackupOptions) (backup.Header, backup.Trailer, error) {
	var tx *sql.Tx
	var err error
	if s.d.name == DialectPostgres {
		tx, err = s.rdb.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	} else {
		tx, err = s.rdb.BeginTx(ctx, nil)
	}
	if err != nil {
		return backup.Header{}, backup.Trailer{}, s.fail("backup", err)
	}
	defer func() { _ = tx.Rollback() }()
	c := conn{q: tx, d: s.d}
	h := backup.Header{FloeVersion: opts.FloeVersion, Dialect: s.d.name}
	// The first read fixes the snapshot (SQLite starts its read
	// transaction here); the clock is read right after.
	if err := c.queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&h.SchemaVersion); err != nil {
		return h, backup.Trailer{}, s.fail("backup", err)
	}
	h.CreatedAt = s.now().UTC()
	if err := c.queryRow(ctx, "SELECT seq, hash FROM audit_head WHERE id = 1").Scan(&h.AuditHead.Seq, &h.AuditHead.Hash); err != nil {
		return h, backup.Trailer{}, s.fail("backup: audit head", err)
	}
	err = c.queryRow(ctx, "SELECT seq FROM audit_checkpoint WHERE id = 1").Scan(&h.AuditCheckpointSeq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, backup.Trailer{}, s.fail("backup: audit checkpoint", err)
	}
	tables, err := s.tableOrder(ctx, c)
	if err != nil {
		return h, backup.Trailer{}, s.fail("backup: list tables", err)
	}
	bw, err := backup.NewWriter(w, h)
	if err != nil {
		return h, backup.Trailer{}, err
	}
	for _, t := range tables {
		if err := s.backupTable(ctx, c, bw, t); err != nil {
			return h, backup.Trailer{}, err
		}
	}
	tr, err := bw.Close()
	if err != nil {
		return h, tr, err
	}
	return h, tr, nil
}

func (s *Store) backupTable(ctx context.Context, c conn, bw *backup.Writer, name string) error {
	cols, err := s.columns(ctx, c, name)
	if err != nil {
		return s.fail("backup: columns of "+name, err)
	}
	t := backup.Table{Name: name}
	names := make([]string, len(cols))
	for i, col := range cols {
		t.Columns = append(t.Columns, backup.Column{Name: col.name, Kind: col.kind()})
		names[i] = col.name
	}
	if err := bw.BeginTable(t); err != nil {
		return err
	}
	rows, err := c.query(ctx, "SELECT "+strings.Join(names, ", ")+" FROM "+name)
	if err != nil {
		return s.fail("backup: read "+name, err)
	}
	defer rows.Close()
	raw := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	vals := make([]any, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return s.fail("backup: read "+name, err)
		}
		for i, v := range raw {
			if vals[i], err = neutral(v, t.Columns[i].Kind); err != nil {
				return floe.Wrap(floe.Internal, err, "backup: %s.%s", name, cols[i].name)
			}
		}
		if err := bw.Row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail("backup: read "+name, err)
	}
	return nil
}

// neutral converts a scanned value into the Go type of kind k.
func neutral(v any, k backup.Kind) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		if k == backup.KindInt {
			return x, nil
		}
	case bool:
		if k == backup.KindInt {
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case string:
		switch k {
		case backup.KindText:
			return x, nil
		case backup.KindBlob:
			return []byte(x), nil
		}
	case []byte:
		switch k {
		case backup.KindText:
			return string(x), nil
		case backup.KindBlob:
			return slices.Clone(x), nil
		}
	case time.Time:
		if k == backup.KindText {
			return x.UTC().Format(timeLayout), nil
		}
	}
	return nil, fmt.Errorf("a %T value in a %s column", v, k)
}

// column is a column of a store table as the database describes it.
type column struct {
	name     string
	typ      string // declared type (SQLite) or data_type (PostgreSQL), lower case
	identity bool   // a PostgreSQL identity column
}

// kind is the dialect-neutral kind of c.
func (c column) kind() backup.Kind {
	switch {
	case strings.Contains(c.typ, "int"), c.typ == "boolean":
		return backup.KindInt
	case strings.Contains(c.typ, "blob"), c.typ == "bytea":
		return backup.KindBlob
	}
	return backup.KindText
}

// destValue converts a backup value into what the column c takes.
func (d *dialect) destValue(v any, c column) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind() {
	case backup.KindInt:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("column %s takes integers, the backup has %T", c.name, v)
		}
		if c.typ == "boolean" {
			return n != 0, nil
		}
		return n, nil
	case backup.KindBlob:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
		return nil, fmt.Errorf("column %s takes bytes, the backup has %T", c.name, v)
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return nil, fmt.Errorf("column %s takes text, the backup has %T", c.name, v)
	}
	if strings.HasPrefix(c.typ, "timestamp") {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("column %s: %q is not a time: %w", c.name, s, err)
		}
		return t.UTC(), nil
	}
	return s, nil
}

// tables lists the store's tables (not schema_migrations).
func (s *Store) tables(ctx context.Context, c conn) ([]string, error) {
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'`
	if s.d.name == DialectPostgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	names, err := queryStrings(ctx, c, q)
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "schema_migrations" })
	slices.Sort(names)
	return names, nil
}

// tableOrder returns the store's tables with every table after the tables
// its foreign keys reference.
func (s *Store) tableOrder(ctx context.Context, c conn) ([]string, error) {
	names, err := s.tables(ctx, c)
	if err != nil {
		return nil, err
	}
	parents := make(map[string][]string, len(names))
	for _, n := range names {
		q := `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`
		if s.d.name == DialectPostgres {
			q = `SELECT DISTINCT p.relname FROM pg_constraint co
				JOIN pg_class t ON t.oid = co.conrelid
				JOIN pg_namespace ns ON ns.oid = t.relnamespace
				JOIN pg_class p ON p.oid = co.confrelid
				WHERE co.contype = 'f' AND t.relname = ? AND ns.nspname = current_schema()`
		}
		if parents[n], err = queryStrings(ctx, c, q, n); err != nil {
			return nil, err
		}
	}
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("foreign keys form a cycle at table %s", n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, p := range parents[n] {
			if p != n {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		state[n] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// columns describes the columns of table in their order.
func (s *Store) columns(ctx context.Context, c conn, table string) ([]column, error) {
	q := `SELECT name, lower(type), 'NO' FROM pragma_table_info(?) ORDER BY cid`
	if s.d.name == DialectPostgres {
		q = `SELECT column_name, lower(data_type), is_identity FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`
	}
	rows, err := c.query(ctx, q, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var col column
		var ident string
		if err := rows.Scan(&col.name, &col.typ, &ident); err != nil {
			return nil, err
		}
		col.identity = ident == "YES"
		cols = append(cols, col)
	}
	return cols, rows.Err()
}

func queryStrings(ctx context.Context, c conn, q string, args ...any) ([]string, error) {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// RestoreOptions configures Restore.
type RestoreOptions struct {
	// Force replaces a store that is not empty.
	Force bool
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	// Header is the backup's header.
	Header backup.Header
	// Tables and Rows count what was restored.
	Tables int
	Rows   int64
	// SchemaVersion is the store's schema version after the restore (the
	// binary's newest migration).
	SchemaVersion int
}

// restoreBatch is how many rows one INSERT of a restore carries, and
// restoreMaxArgs bounds its parameters (SQLite allows 32,766, PostgreSQL
// 65,535).
const (
	restoreBatch   = 200
	restoreMaxArgs = 30_000
)

// seedTables are tables whose single row the migrations insert: a store
// with only those rows (and an empty audit chain) is empty.
var seedTables = []string{"audit_head", "authz_version", "revocation_version", "console_session_lock"}

// Restore replaces the store's contents with the backup read from r, in one
// transaction: it drops every table, recreates the schema at the backup's
// migration version, loads the rows, applies this binary's newer
// migrations and commits only once the whole file was read and its hash
// and row counts checked. Anything wrong leaves the store as it was. It
// refuses (floe.Conflict) a store that is not empty unless opts.Force, and
// (floe.Invalid) a damaged file or one from a newer schema. Stop every
// node using the store first: a restore is not meant to run under them.
func (s *Store) Restore(ctx context.Context, r io.Reader, opts RestoreOptions) (RestoreResult, error) {
	var res RestoreResult
	rd, err := backup.NewReader(r)
	if err != nil {
		return res, floe.Wrap(floe.Invalid, err, "restore")
	}
	res.Header = rd.Header()
	ms, err := migrations(s.d.name)
	if err != nil {
		return res, s.fail("restore", err)
	}
	latest := ms[len(ms)-1].version
	if v := res.Header.SchemaVersion; v > latest {
		return res, floe.E(floe.Invalid, "", "restore: the backup's schema version %d is newer than this floe's (%d); restore it with floe %s or newer",
			v, latest, res.Header.FloeVersion)
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return res, s.fail("restore", err)
	}
	defer func() { _ = tx.Rollback() }()
	c := conn{q: tx, d: s.d}
	if s.d.name == DialectPostgres {
		if _, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(migrationLockKey)); err != nil {
			return res, s.fail("restore", err)
		}
	} else if _, err := c.exec(ctx, "PRAGMA defer_foreign_keys = ON"); err != nil {
		return res, s.fail("restore", err)
	}
	order, err := s.tableOrder(ctx, c)
	if err != nil {
		return res, s.fail("restore: list tables", err)
	}
	if !opts.Force {
		if err := s.checkEmpty(ctx, c, order); err != nil {
			return res, err
		}
	}
	// Drop everything, children first, and build the backup's schema.
	for _, t := range slices.Backward(order) {
		q := "DROP TABLE " + t
		if s.d.name == DialectPostgres {
			q += " CASCADE"
		}
		if _, err := c.exec(ctx, q); err != nil {
			return res, s.fail("restore: drop "+t, err)
		}
	}
	if _, err := c.exec(ctx, "DROP TABLE IF EXISTS schema_migrations"); err != nil {
		return res, s.fail("restore: drop schema_migrations", err)
	}
	for _, m := range ms {
		if m.version <= res.Header.SchemaVersion {
			if err := s.applyMigration(ctx, c, m); err != nil {
				return res, s.fail("restore: migrate", err)
			}
		}
	}
	for {
		t, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, floe.Wrap(floe.Invalid, err, "restore")
		}
		n, err := s.restoreTable(ctx, tx, c, rd, t)
		if err != nil {
			if errors.Is(err, backup.ErrInvalid) {
				return res, err
			}
			// A damaged file may fail an insert before its hash is
			// checked: then the damage is the error to report.
			if derr := drain(rd); derr != nil {
				return res, floe.Wrap(floe.Invalid, derr, "restore")
			}
			return res, err
		}
		res.Tables++
		res.Rows += n
	}
	for _, m := range ms {
		if m.version > res.Header.SchemaVersion {
			if err := s.applyMigration(ctx, c, m); err != nil {
				return res, s.fail("restore: migrate", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return res, s.fail("restore: commit", err)
	}
	res.SchemaVersion = latest
	return res, nil
}

// drain reads the rest of rd and returns the error that says the file is
// damaged, if it is.
func drain(rd *backup.Reader) error {
	for {
		_, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, backup.ErrInvalid) {
			return err
		}
		if err != nil {
			return nil
		}
	}
}

// checkEmpty answers floe.Conflict unless the store holds nothing but the
// rows its migrations seed.
func (s *Store) checkEmpty(ctx context.Context, c conn, tables []string) error {
	for _, t := range tables {
		if slices.Contains(seedTables, t) {
			continue
		}
		has, err := c.exists(ctx, "SELECT 1 FROM "+t+" LIMIT 1")
		if err != nil {
			return s.fail("restore: check empty", err)
		}
		if has {
			return floe.E(floe.Conflict, "", "restore: the store is not empty (table %s has rows); restore into a new store, or pass --force to replace it", t)
		}
	}
	var seq int64
	if err := c.queryRow(ctx, "SELECT seq FROM audit_head WHERE id = 1").Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s.fail("restore: check empty", err)
	}
	if seq != 0 {
		return floe.E(floe.Conflict, "", "restore: the store is not empty (its audit log has %d records); restore into a new store, or pass --force to replace it", seq)
	}
	return nil
}

// restoreTable loads the rows of t (the migrations' seed rows are replaced).
func (s *Store) restoreTable(ctx context.Context, tx *sql.Tx, c conn, rd *backup.Reader, t backup.Table) (int64, error) {
	have, err := s.columns(ctx, c, t.Name)
	if err != nil {
		return 0, s.fail("restore: columns of "+t.Name, err)
	}
	if len(have) == 0 {
		return 0, floe.E(floe.Invalid, "", "restore: the backup has a table %s that schema version %d does not have", t.Name, rd.Header().SchemaVersion)
	}
	cols := make([]column, len(t.Columns))
	names := make([]string, len(t.Columns))
	identity := ""
	for i, bc := range t.Columns {
		j := slices.IndexFunc(have, func(c column) bool { return c.name == bc.Name })
		if j < 0 {
			return 0, floe.E(floe.Invalid, "", "restore: the backup has a column %s.%s that schema version %d does not have", t.Name, bc.Name, rd.Header().SchemaVersion)
		}
		cols[i], names[i] = have[j], bc.Name
		if have[j].identity {
			identity = bc.Name
		}
	}
	if _, err := c.exec(ctx, "DELETE FROM "+t.Name); err != nil {
		return 0, s.fail("restore: clear "+t.Name, err)
	}
	head := "INSERT INTO " + t.Name + " (" + strings.Join(names, ", ") + ")"
	if identity != "" {
		head += " OVERRIDING SYSTEM VALUE"
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")"
	insert := func(rows int) string {
		return s.d.rebind(head + " VALUES " + strings.TrimSuffix(strings.Repeat(tuple+", ", rows), ", "))
	}
	// Rows go in multi-row INSERTs of restoreBatch rows (one prepared
	// statement), the rest in one last statement.
	per := max(1, min(restoreBatch, restoreMaxArgs/len(cols)))
	var st *sql.Stmt
	defer func() {
		if st != nil {
			_ = st.Close()
		}
	}()
	args := make([]any, 0, per*len(cols))
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		rows := len(args) / len(cols)
		var err error
		if rows == per {
			if st == nil {
				if st, err = tx.PrepareContext(ctx, insert(per)); err != nil {
					return err
				}
			}
			_, err = st.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insert(rows), args...)
		}
		args = args[:0]
		return err
	}
	var n int64
	for {
		vals, err := rd.NextRow()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, floe.Wrap(floe.Invalid, err, "restore")
		}
		for i, v := range vals {
			a, err := s.d.destValue(v, cols[i])
			if err != nil {
				return n, floe.Wrap(floe.Invalid, err, "restore: %s", t.Name)
			}
			args = append(args, a)
		}
		n++
		if len(args) == per*len(cols) {
			if err := flush(); err != nil {
				return n, s.fail("restore: insert into "+t.Name, err)
			}
		}
	}
	if err := flush(); err != nil {
		return n, s.fail("restore: insert into "+t.Name, err)
	}
	if identity != "" {
		q := fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%s', '%s'), COALESCE(MAX(%s), 0) + 1, false) FROM %s", t.Name, identity, identity, t.Name)
		if _, err := c.exec(ctx, q); err != nil {
			return n, s.fail("restore: sequence of "+t.Name, err)
		}
	}
	return n, nil
}
