package engine

import (
	"context"
	"io"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// ForeignTables opens the tables of foreign (federated) catalogs: another
// Iceberg REST catalog Floe serves as one of its warehouses, read in place
// (package federation). The engine reads them like local tables, judged by
// the same grants and data filters, but never writes them.
type ForeignTables interface {
	// Foreign reports whether wh names a foreign catalog.
	Foreign(wh string) bool
	// LoadTable loads a table of foreign catalog wh with the storage
	// credentials its remote vended to Floe: the table's FS reads the
	// remote's files. who is the session's caller, whose query the remote
	// calls are audited under. Errors are floe errors (NotFound for a
	// missing table, Unavailable when the remote or its storage cannot
	// answer).
	LoadTable(ctx context.Context, who Caller, wh string, id catalog.Ident) (*table.Table, error)
}

// CodeRemoteUnavailable is the SQLSTATE of a query that needs a foreign
// catalog (or its storage) that does not answer: 08001, as PostgreSQL's
// postgres_fdw reports a remote server it cannot reach. The session stays
// usable; the same query succeeds once the remote is back.
const CodeRemoteUnavailable = "08001"

// foreignScope is the foreign catalog whose table a query reads at a point
// of its planning: the files named there are the remote's, read through
// src and cached under keys of their own, so that no location, table UUID
// or plan of a foreign catalog is ever taken for a local one (or another
// foreign catalog's) that happens to have the same name.
type foreignScope struct {
	wh  string
	src ObjectSource
}

type foreignScopeKey struct{}

// withForeign returns ctx reading the files of tbl, a table of foreign
// catalog wh.
func withForeign(ctx context.Context, wh string, tbl *table.Table) (context.Context, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return ctx, floe.Wrap(floe.Unavailable, err, "foreign catalog %s: cannot open the storage of table %s", wh, strings.Join(tbl.Identifier(), "."))
	}
	return context.WithValue(ctx, foreignScopeKey{}, &foreignScope{wh: wh, src: foreignSource{wh: wh, io: IOSource{FS: fs}}}), nil
}

// scopeOf returns the foreign catalog ctx reads, nil for local tables.
func scopeOf(ctx context.Context) *foreignScope {
	s, _ := ctx.Value(foreignScopeKey{}).(*foreignScope)
	return s
}

// key returns k (a file location, table UUID or cache key) as the caches
// of the scope know it: k itself for local tables.
func (s *foreignScope) key(k string) string {
	if s == nil {
		return k
	}
	return "foreign\x00" + s.wh + "\x00" + k
}

// foreignSource reads the files of a foreign table through the FileIO
// made from the credentials its remote vended; every failure is
// Unavailable and names the catalog.
type foreignSource struct {
	wh string
	io IOSource
}

func (f foreignSource) LocalPath(context.Context, string) (string, bool, error) {
	return "", false, nil
}

func (f foreignSource) Open(ctx context.Context, location string) (rc io.ReadCloser, size int64, err error) {
	rc, size, err = f.io.Open(ctx, location)
	if err != nil {
		return nil, 0, floe.Wrap(floe.Unavailable, err, "foreign catalog %s: cannot read data file %s", f.wh, location)
	}
	return rc, size, nil
}

func (f foreignSource) Dirs() []string { return nil }

// remoteError turns an error of a foreign catalog that does not answer
// into SQLSTATE CodeRemoteUnavailable, naming it; other errors pass.
func remoteError(wh string, err error) error {
	if err == nil || floe.KindOf(err) != floe.Unavailable {
		return err
	}
	msg := floe.PublicMessage(err)
	if !strings.Contains(msg, "foreign catalog "+wh) {
		msg = "foreign catalog " + wh + " is unavailable: " + msg
	}
	return &pgwire.Error{Code: CodeRemoteUnavailable, Message: msg, Err: err}
}

// readOnlyForeign refuses a change to a table of foreign catalog wh.
func readOnlyForeign(wh string) error {
	return floe.E(floe.Forbidden, "", "%s is a foreign catalog, read-only in Floe's SQL endpoint: write to it in its own catalog", wh)
}

// isForeign reports whether wh names a foreign catalog.
func (e *Engine) isForeign(wh string) bool {
	return e.opts.Foreign != nil && wh != e.opts.Warehouse && e.opts.Foreign.Foreign(wh)
}
