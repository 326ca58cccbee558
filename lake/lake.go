package lake

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Tables is what a Lake needs from the catalog (*catalog.Catalog).
type Tables interface {
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error)
	CommitTable(ctx context.Context, wh string, tc catalog.TableCommit) (*catalog.TableState, error)
}

// Options configures a Lake. Zero values mean defaults.
type Options struct {
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Lake opens Floe tables as iceberg-go tables.
type Lake struct {
	tables Tables
	fs     icebergio.IO
	log    *slog.Logger
}

// New returns a Lake that commits through tables and reads and writes
// files through fs (BucketFS for the embedded store, NewS3FS for external
// S3). fs must implement icebergio.WriteFileIO for writes.
func New(tables Tables, fs icebergio.IO, opts Options) *Lake {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Lake{tables: tables, fs: fs, log: opts.Logger}
}

// FS returns the FileIO the lake's tables use.
func (l *Lake) FS() icebergio.IO { return l.fs }

// LoadTable opens the table id of warehouse wh at its current metadata.
func (l *Lake) LoadTable(ctx context.Context, wh string, id catalog.Ident) (*table.Table, error) {
	return l.warehouse(wh).load(ctx, id)
}

// warehouse returns the iceberg-go catalog of one warehouse.
func (l *Lake) warehouse(wh string) *catalogIO { return &catalogIO{l: l, wh: wh} }

// catalogIO is the table.CatalogIO of one warehouse: iceberg-go reloads
// and commits tables through it.
type catalogIO struct {
	l  *Lake
	wh string
}

var _ table.CatalogIO = (*catalogIO)(nil)

func (c *catalogIO) load(ctx context.Context, id catalog.Ident) (*table.Table, error) {
	st, err := c.l.tables.LoadTable(ctx, c.wh, id)
	if err != nil {
		return nil, err
	}
	return c.table(id, st), nil
}

func (c *catalogIO) table(id catalog.Ident, st *catalog.TableState) *table.Table {
	ident := append(slices.Clone([]string(id.Namespace)), id.Name)
	return table.New(ident, st.Metadata, st.Location, c.fsys, c)
}

func (c *catalogIO) fsys(context.Context) (icebergio.IO, error) { return c.l.fs, nil }

// LoadTable implements table.CatalogIO.
func (c *catalogIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	id, err := identOf(ident)
	if err != nil {
		return nil, err
	}
	return c.load(ctx, id)
}

// CommitTable implements table.CatalogIO: the requirements and updates go
// to the Floe catalog as one table commit. A failed requirement or a lost
// race (Conflict) is reported as table.ErrCommitFailed, which tells
// iceberg-go and AppendFiles that nothing was committed and that the
// commit may be retried on fresh metadata.
func (c *catalogIO) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	id, err := identOf(ident)
	if err != nil {
		return nil, "", err
	}
	detachSnapshots(updates)
	st, err := c.l.tables.CommitTable(ctx, c.wh, catalog.TableCommit{Ident: id, Requirements: reqs, Updates: updates})
	if err != nil {
		if floe.KindOf(err) == floe.Conflict {
			c.l.log.DebugContext(ctx, "lake: commit lost to a concurrent writer", "table", id.String(), "err", err)
			return nil, "", fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
		return nil, "", err
	}
	return st.Metadata, st.Location, nil
}

// identOf turns an iceberg-go identifier (namespace levels, then the name)
// into a catalog identifier.
func identOf(ident table.Identifier) (catalog.Ident, error) {
	if len(ident) < 2 {
		return catalog.Ident{}, floe.E(floe.Invalid, "table", "table identifier %q needs a namespace and a name", ident)
	}
	n := len(ident) - 1
	return catalog.Ident{Namespace: catalog.Namespace(slices.Clone(ident[:n])), Name: ident[n]}, nil
}

// DetachSnapshots is detachSnapshots, for callers that send iceberg-go's
// updates to the catalog themselves (the SQL endpoint's transaction
// blocks).
func DetachSnapshots(updates []table.Update) { detachSnapshots(updates) }

// detachSnapshots gives the snapshot of every add-snapshot update its own
// copies of the values its pointer fields share with the transaction that
// produced it. iceberg-go's snapshot producer points a new snapshot's
// schema-id and parent-snapshot-id into the transaction (its metadata
// builder, which holds the base metadata); the catalog copies the snapshot
// into the new metadata it caches, so without this every committed version
// would keep the one before it alive, and a table's history would hold
// memory quadratic in its snapshot count.
func detachSnapshots(updates []table.Update) {
	for _, u := range updates {
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		v := reflect.ValueOf(u)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			continue
		}
		f := v.Elem().FieldByName("Snapshot")
		if !f.IsValid() || !f.CanInterface() {
			continue
		}
		snap, ok := f.Interface().(*table.Snapshot)
		if !ok || snap == nil {
			continue
		}
		snap.ParentSnapshotID = clonePtr(snap.ParentSnapshotID)
		snap.SchemaID = clonePtr(snap.SchemaID)
		snap.FirstRowID = clonePtr(snap.FirstRowID)
		snap.AddedRows = clonePtr(snap.AddedRows)
		snap.ManifestLocations = slices.Clone(snap.ManifestLocations)
		if snap.Summary != nil {
			snap.Summary = &table.Summary{Operation: snap.Summary.Operation, Properties: maps.Clone(snap.Summary.Properties)}
		}
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
