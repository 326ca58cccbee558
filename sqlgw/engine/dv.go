package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table/dv"
	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe"
)

// maxDVBlobBytes bounds the deletion vector blob the engine reads for one
// data file (a run-length encoded bitmap of a billion rows takes a few
// kilobytes; the bound only stops a hostile content_size_in_bytes).
const maxDVBlobBytes = 64 << 20

// dvBatchRows is how many deleted positions are converted at a time.
const dvBatchRows = 64 << 10

// dvPositionsSchema is the schema of the position files made from
// deletion vectors: that of an Iceberg position delete file.
var dvPositionsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "file_path", Type: arrow.BinaryTypes.String},
	{Name: "pos", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// dvPath returns the path of a Parquet file that lists, as (file_path,
// pos) rows like a position delete file, the positions the deletion
// vector d deletes from the data file at dataLoc of rows rows. The file is
// made in memory from the Puffin blob d points at and kept in the file
// cache (under its budget) like the copies of data files.
func (c *fileCache) dvPath(ctx context.Context, d iceberg.DataFile, dataLoc string, rows int64, ps *pinSet) (string, error) {
	off, size := d.ContentOffset(), d.ContentSizeInBytes()
	if off == nil || size == nil {
		return "", floe.E(floe.Invalid, "table", "deletion vector %s lacks content_offset or content_size_in_bytes", d.FilePath())
	}
	if ref := d.ReferencedDataFile(); ref == nil || *ref != dataLoc {
		return "", floe.E(floe.Invalid, "table", "deletion vector %s does not name data file %s", d.FilePath(), dataLoc)
	}
	key := scopeOf(ctx).key("deletion-vector:"+d.FilePath()) + "@" + strconv.FormatInt(*off, 10) + "+" + strconv.FormatInt(*size, 10) + ":" + dataLoc
	return c.pinned(ctx, key, ps, func(ctx context.Context) (*cachedFile, error) {
		blob, err := c.readRange(ctx, d.FilePath(), *off, *size)
		if err != nil {
			return nil, err
		}
		bm, err := decodeDV(blob, d.Count(), rows)
		if err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "deletion vector %s of data file %s is invalid", d.FilePath(), dataLoc)
		}
		return writePositions(key, dataLoc, bm)
	})
}

// readRange reads size bytes at off of the object at location.
func (c *fileCache) readRange(ctx context.Context, location string, off, size int64) ([]byte, error) {
	if off < 0 || size <= 0 || size > maxDVBlobBytes {
		return nil, floe.E(floe.Invalid, "table", "deletion vector blob of %d bytes at %d in %s is out of bounds (at most %d bytes)", size, off, location, maxDVBlobBytes)
	}
	buf := make([]byte, size)
	src := c.source(ctx)
	if p, ok, err := src.LocalPath(ctx, location); err != nil {
		return nil, err
	} else if ok {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("open deletion vector file %q: %w", location, err)
		}
		defer f.Close()
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "cannot read the deletion vector blob at %d+%d of %s", off, size, location)
		}
		return buf, nil
	}
	body, total, err := src.Open(ctx, location)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if off+size > total {
		return nil, floe.E(floe.Invalid, "table", "deletion vector blob at %d+%d lies past the end of %s (%d bytes)", off, size, location, total)
	}
	if _, err := io.CopyN(io.Discard, body, off); err != nil {
		return nil, fmt.Errorf("read deletion vector file %q: %w", location, err)
	}
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, fmt.Errorf("read deletion vector file %q: %w", location, err)
	}
	return buf, nil
}

// decodeDV decodes a deletion-vector-v1 blob (length, magic, portable
// Roaring bitmap, CRC-32) of a data file of rows rows, which the manifest
// says deletes cardinality positions. The blob comes from the warehouse,
// written by any engine: a blob that does not decode, whose cardinality
// differs, or that deletes a position past the end of the data file is an
// error (never a panic).
func decodeDV(blob []byte, cardinality, rows int64) (bm *dv.RoaringPositionBitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, fmt.Errorf("malformed deletion vector: %v", r)
		}
	}()
	if cardinality < 0 || cardinality > rows {
		return nil, fmt.Errorf("deletion vector deletes %d of %d rows", cardinality, rows)
	}
	bm, err = dv.DeserializeDV(blob, cardinality)
	if err != nil {
		return nil, err
	}
	for p := range bm.Positions() {
		if p >= uint64(rows) {
			return nil, fmt.Errorf("deletion vector deletes position %d of a data file of %d rows", p, rows)
		}
	}
	return bm, nil
}

// writePositions writes the positions of bm, for the data file at dataLoc,
// as a Parquet file in a new memfd.
func writePositions(key, dataLoc string, bm *dv.RoaringPositionBitmap) (_ *cachedFile, err error) {
	fd, err := unix.MemfdCreate("floe-dv", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+key)
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	// Only the writer: the Parquet writer closes a sink that can be closed.
	w, err := pqarrow.NewFileWriter(dvPositionsSchema, struct{ io.Writer }{f},
		parquet.NewWriterProperties(parquet.WithDictionaryDefault(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("write deletion vector positions: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, dvPositionsSchema)
	defer b.Release()
	paths, pos := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.Int64Builder)
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return w.WriteBuffered(rec)
	}
	n := 0
	for p := range bm.Positions() {
		paths.Append(dataLoc)
		pos.Append(int64(p))
		if n++; n%dvBatchRows == 0 {
			if err := flush(); err != nil {
				_ = w.Close()
				return nil, fmt.Errorf("write deletion vector positions: %w", err)
			}
		}
	}
	if n%dvBatchRows != 0 || n == 0 {
		if err := flush(); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("write deletion vector positions: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("write deletion vector positions: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &cachedFile{location: key, f: f, size: st.Size()}, nil
}
