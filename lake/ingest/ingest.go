package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// Mode says what an ingest does to the table.
type Mode string

// The modes.
const (
	// Auto creates the table if it does not exist, else appends.
	Auto Mode = ""
	// Create creates the table; it fails if the table exists.
	Create Mode = "create"
	// Append adds rows to an existing table.
	Append Mode = "append"
	// Overwrite replaces all current rows of an existing table in one
	// snapshot.
	Overwrite Mode = "overwrite"
)

// ParseMode reads a mode name ("" or "auto" is Auto).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "create", "append", "overwrite":
		return Mode(s), nil
	}
	return "", floe.E(floe.Invalid, "mode", "unknown mode %q (want create, append or overwrite)", s)
}

// Catalog is what the Service needs from the Floe catalog (*catalog.Catalog).
type Catalog interface {
	lake.Tables
	CreateTable(ctx context.Context, wh string, ns catalog.Namespace, req catalog.CreateTableRequest) (*catalog.TableState, error)
	DropTable(ctx context.Context, wh string, id catalog.Ident, purge bool) error
	Warehouse(ctx context.Context, name string) (catalog.Warehouse, error)
}

// Options configures a Service. Zero values mean defaults.
type Options struct {
	// TempDir holds spooled Parquet and Arrow file inputs ("" is os.TempDir()).
	TempDir string
	// MaxSpoolBytes bounds a spooled input; 0 is no bound.
	MaxSpoolBytes int64
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Service loads data into the tables of a Floe catalog.
type Service struct {
	cat  Catalog
	lake *lake.Lake
	opts Options
	log  *slog.Logger
}

// New returns a Service that creates and loads tables in cat and writes
// their files through lk.
func New(cat Catalog, lk *lake.Lake, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cat: cat, lake: lk, opts: opts, log: opts.Logger}
}

// Request describes one ingest.
type Request struct {
	Warehouse string
	Table     catalog.Ident
	// Mode is what to do (default: create the table if missing, else append).
	Mode Mode
	// Format of the input ("" detects it from Name, else the content).
	Format Format
	// Name is the input's file name (format detection, messages).
	Name string
	// Schema is the schema of a new table; nil infers it from the input.
	// It is ignored when the table exists.
	Schema *iceberg.Schema
	// Partition is the partition spec of a new table (ParsePartition syntax).
	Partition string
	// TargetFileSize is the target size of the data files written, in
	// bytes (0: the table's write.target-file-size-bytes, or 512 MiB). A
	// new table keeps it as that property.
	TargetFileSize int64
	// BatchSize is the rows per record batch read (0: DefaultBatchSize).
	BatchSize int
	// Properties of a new table.
	Properties map[string]string
	// SnapshotProperties go into the summary of the snapshot committed.
	SnapshotProperties map[string]string
	// Authorize, if set, is called once the ingest knows whether it
	// creates the table (create) or writes to an existing one, before
	// anything is read or changed; an error stops the ingest.
	Authorize func(create bool) error
	// Progress, if set, is called after each batch with the rows read so
	// far and the input bytes consumed so far.
	Progress func(rows, bytes int64)
}

// Result is what an ingest did.
type Result struct {
	// Table is the table loaded, as "ns.name".
	Table string `json:"table"`
	// Mode is what was done: create, append or overwrite.
	Mode Mode `json:"mode"`
	// Created is whether the table was created.
	Created bool `json:"created"`
	// Format is the input format read.
	Format Format `json:"format"`
	// Rows is the number of rows committed.
	Rows int64 `json:"rows"`
	// Files is the number of data files written.
	Files int `json:"files"`
	// Bytes is the total size of those files.
	Bytes int64 `json:"bytes"`
	// InputBytes is the size of the input read.
	InputBytes int64 `json:"input_bytes"`
	// SnapshotID is the table's current snapshot after the commit (0 if
	// it has none: nothing was loaded into a new table).
	SnapshotID int64 `json:"snapshot_id"`
	// Seconds is how long the ingest took.
	Seconds float64 `json:"seconds"`
}

// Ingest reads r according to req and commits its rows to the table as
// one snapshot. On failure nothing is committed: the data files written
// are removed and a table created for this ingest is dropped again. Bad
// input is reported as a floe.Invalid error that says what is wrong.
func (s *Service) Ingest(ctx context.Context, req Request, r io.Reader) (res Result, err error) {
	start := time.Now()
	res = Result{Table: req.Table.String()}
	if err := req.Table.Validate(); err != nil {
		return res, err
	}
	if req.TargetFileSize < 0 {
		return res, floe.E(floe.Invalid, "ingest", "target file size %d must not be negative", req.TargetFileSize)
	}
	exists := true
	tbl, err := s.lake.LoadTable(ctx, req.Warehouse, req.Table)
	if err != nil {
		if floe.KindOf(err) != floe.NotFound {
			return res, err
		}
		exists = false
	}
	mode := req.Mode
	switch {
	case mode == Auto && exists:
		mode = Append
	case mode == Auto:
		mode = Create
	case mode == Create && exists:
		return res, floe.E(floe.AlreadyExists, "table", "table %s exists already (mode create); use mode append or overwrite", req.Table)
	case mode != Create && !exists:
		return res, floe.E(floe.NotFound, "table", "table %s does not exist (mode %s); use mode create", req.Table, mode)
	}
	res.Mode = mode
	if req.Authorize != nil {
		if err := req.Authorize(mode == Create); err != nil {
			return res, err
		}
	}
	var target *iceberg.Schema
	if exists {
		target = tbl.Schema()
	} else {
		target = req.Schema
	}
	src, err := Open(ctx, r, ReadOptions{Format: req.Format, Name: req.Name, Target: target, BatchSize: req.BatchSize,
		TempDir: s.opts.TempDir, MaxSpoolBytes: s.opts.MaxSpoolBytes})
	if err != nil {
		return res, err
	}
	defer src.Close()
	res.Format = src.Format

	if mode == Create {
		tbl, err = s.create(ctx, req, src)
		if err != nil {
			return res, err
		}
		res.Created = true
		defer func() {
			if err != nil {
				// Nothing of this ingest may remain: not even the empty table.
				if derr := s.cat.DropTable(context.WithoutCancel(ctx), req.Warehouse, req.Table, true); derr != nil {
					s.log.WarnContext(ctx, "ingest: cannot drop the table created for a failed ingest", "table", req.Table.String(), "err", derr)
				}
			}
		}()
	}
	conf, err := newConformer(ctx, src, tbl.Schema(), memory.DefaultAllocator)
	if err != nil {
		return res, err
	}
	defer conf.Release()
	conf.name = req.Name
	if req.Progress != nil {
		conf.progress = func(rows int64) { req.Progress(rows, src.BytesRead.Load()) }
	}
	var opts []table.WriteRecordOption
	if req.TargetFileSize > 0 {
		opts = append(opts, table.WithTargetFileSize(req.TargetFileSize))
	}
	// A few batches in flight per writer bound the memory of a large load.
	opts = append(opts, table.WithRecordBatchBufferSize(4))
	files, err := lake.WriteDataFiles(ctx, tbl, conf, opts...)
	if err != nil {
		return res, inputError(err, conf.Err())
	}
	for _, f := range files {
		res.Rows += f.Count()
		res.Bytes += f.FileSizeBytes()
	}
	res.Files = len(files)
	res.InputBytes = src.BytesRead.Load()
	props := iceberg.Properties{"floe.ingest.format": string(src.Format), "floe.ingest.mode": string(mode)}
	for k, v := range req.SnapshotProperties {
		props[k] = v
	}
	var out *table.Table
	switch {
	case mode == Overwrite:
		out, err = lake.ReplaceAllFiles(ctx, tbl, files, props)
	case len(files) == 0:
		out = tbl
	default:
		out, err = lake.AppendFiles(ctx, tbl, files, props)
	}
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			lake.RemoveFiles(ctx, tbl, files)
		}
		return res, err
	}
	if snap := out.CurrentSnapshot(); snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	res.Seconds = time.Since(start).Seconds()
	s.log.InfoContext(ctx, "ingest: committed", "table", req.Table.String(), "mode", mode, "format", src.Format,
		"rows", res.Rows, "files", res.Files, "bytes", res.Bytes, "snapshot_id", res.SnapshotID, "seconds", res.Seconds)
	return res, nil
}

// inputError prefers the reader's error (bad input: Invalid) over the
// writer's wrapping of it.
func inputError(writeErr, readErr error) error {
	if readErr != nil {
		return readErr
	}
	var fe *floe.Error
	if errors.As(writeErr, &fe) {
		return fe
	}
	return writeErr
}

// create creates the table of a Create ingest from the given or inferred
// schema and the partition spec.
func (s *Service) create(ctx context.Context, req Request, src *Source) (*table.Table, error) {
	sc := req.Schema
	if sc == nil {
		var err error
		if sc, err = InferSchema(src.Schema()); err != nil {
			return nil, err
		}
	}
	spec, err := ParsePartition(req.Partition, sc)
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	for k, v := range req.Properties {
		props[k] = v
	}
	if req.TargetFileSize > 0 {
		props[table.WriteTargetFileSizeBytesKey] = strconv.FormatInt(req.TargetFileSize, 10)
	}
	if _, err := s.cat.CreateTable(ctx, req.Warehouse, req.Table.Namespace, catalog.CreateTableRequest{
		Name: req.Table.Name, Schema: sc, Spec: &spec, Properties: props}); err != nil {
		return nil, err
	}
	tbl, err := s.lake.LoadTable(ctx, req.Warehouse, req.Table)
	if err != nil {
		return nil, fmt.Errorf("ingest: load the new table: %w", err)
	}
	return tbl, nil
}

// listable returns the lake's FileIO as one that can list objects, or an
// Unsupported error.
func (s *Service) listable() (icebergio.ListableIO, error) {
	l, ok := s.lake.FS().(icebergio.ListableIO)
	if !ok {
		return nil, floe.E(floe.Unsupported, "storage", "this server's storage cannot list objects")
	}
	return l, nil
}
