package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// Defaults of ReadOptions.
const (
	DefaultBatchSize   = 64 << 10 // rows per record batch
	DefaultSampleRows  = 1000     // rows sampled to infer CSV and NDJSON types
	DefaultSampleBytes = 4 << 20  // at most this much input is sampled
)

// ReadOptions configures Open. Zero values mean defaults.
type ReadOptions struct {
	// Format of the input; "" detects it from Name's extension, else
	// from the first bytes.
	Format Format
	// Name is the input's file name, for format detection and messages.
	Name string
	// Target is the schema the data is going into (an existing table's, or
	// one given for a new table), or nil. CSV and NDJSON columns named
	// like a target column are read as its type instead of an inferred one.
	Target *iceberg.Schema
	// BatchSize is the number of rows per record batch (CSV, NDJSON,
	// Parquet; Arrow inputs keep their own batches).
	BatchSize int
	// SampleRows is how many CSV or NDJSON rows type inference looks at.
	SampleRows int
	// TempDir holds the spooled copy of a Parquet or Arrow file read from
	// a stream (those formats need random access); "" is os.TempDir().
	TempDir string
	// MaxSpoolBytes bounds that copy; 0 is no bound.
	MaxSpoolBytes int64
	// MaxLineBytes bounds one NDJSON line; 0 is DefaultMaxLineBytes.
	MaxLineBytes int
	// Mem allocates Arrow buffers; nil is the Go allocator.
	Mem memory.Allocator
}

func (o *ReadOptions) defaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.SampleRows <= 0 {
		o.SampleRows = DefaultSampleRows
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
}

// Source is an input opened for reading: a record reader (batches stream;
// they are valid until the next call to Next) and the detected format.
// Close releases it and removes any spooled copy.
type Source struct {
	array.RecordReader
	// Format is the format read.
	Format Format
	// BytesRead counts the input bytes consumed so far.
	BytesRead *atomic.Int64
	closers   []func() error
}

// Close releases the reader and removes temporary files.
func (s *Source) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Err returns the reader's error, as a floe.Invalid error that names the
// input: bad input is the caller's to fix.
func (s *Source) Err() error {
	err := s.RecordReader.Err()
	if err == nil {
		return nil
	}
	return badInput(s.Format, err)
}

func badInput(f Format, err error) error {
	if floe.KindOf(err) != floe.Internal {
		return err
	}
	return floe.Wrap(floe.Invalid, err, "cannot read the %s input: %s", f, trimMsg(err.Error()))
}

func trimMsg(s string) string {
	if len(s) > 500 {
		return s[:500] + "..."
	}
	return s
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Open opens r (the whole input) as a Source of the given or detected
// format. CSV, NDJSON and Arrow streams are read as they arrive; Parquet
// and Arrow files need random access and are read in place when r is an
// *os.File, else spooled to a temporary file first.
func Open(ctx context.Context, r io.Reader, o ReadOptions) (*Source, error) {
	o.defaults()
	counter := &atomic.Int64{}
	f, isFile := r.(*os.File)
	br := bufio.NewReaderSize(countingReader{r: r, n: counter}, 256<<10)
	format := o.Format
	if format == "" {
		format = FormatOfName(o.Name)
	}
	if format == "" {
		head, err := br.Peek(8)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("ingest: read input: %w", err)
		}
		format = sniff(head)
	}
	src := &Source{Format: format, BytesRead: counter}
	var err error
	switch format {
	case CSV, TSV:
		comma := ','
		if format == TSV {
			comma = '\t'
		}
		src.RecordReader, err = openCSV(br, comma, o)
	case NDJSON:
		src.RecordReader, err = openNDJSON(br, o)
	case ArrowStream:
		var rdr *ipc.Reader
		rdr, err = ipc.NewReader(br, ipc.WithAllocator(o.Mem), ipc.WithEnsureNativeEndian(true))
		if err == nil {
			src.RecordReader = rdr
		}
	case Parquet, ArrowFile:
		var ra readAtSeeker
		if isFile && !o.spoolAlways() {
			ra = f
		} else {
			var tmp *os.File
			tmp, err = spool(ctx, br, o)
			if err != nil {
				return nil, err
			}
			src.closers = append(src.closers, func() error { tmp.Close(); return os.Remove(tmp.Name()) })
			ra = tmp
		}
		if format == Parquet {
			var closePQ func() error
			src.RecordReader, closePQ, err = openParquet(ctx, ra, o)
			if err == nil {
				src.closers = append(src.closers, closePQ)
			}
		} else {
			src.RecordReader, err = openArrowFile(ra, o)
		}
	default:
		err = floe.E(floe.Invalid, "format", "unknown format %q", format)
	}
	if err != nil {
		_ = src.Close()
		var pe parseError
		if errors.As(err, &pe) {
			return nil, floe.E(floe.Invalid, "input", "%s: %s", inputName(o.Name), pe)
		}
		return nil, badInput(format, err)
	}
	rr := src.RecordReader
	src.closers = append(src.closers, func() error { rr.Release(); return nil })
	return src, nil
}

// spoolAlways is a test hook: never read an *os.File in place.
func (o *ReadOptions) spoolAlways() bool { return false }

type readAtSeeker interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

// spool copies r into a temporary file (bounded by MaxSpoolBytes).
func spool(ctx context.Context, r io.Reader, o ReadOptions) (*os.File, error) {
	tmp, err := os.CreateTemp(o.TempDir, "floe-ingest-*")
	if err != nil {
		return nil, fmt.Errorf("ingest: spool input: %w", err)
	}
	fail := func(err error) (*os.File, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	src := r
	if o.MaxSpoolBytes > 0 {
		src = io.LimitReader(r, o.MaxSpoolBytes+1)
	}
	n, err := io.Copy(tmp, ctxReader{ctx: ctx, r: src})
	if err != nil {
		return fail(fmt.Errorf("ingest: spool input: %w", err))
	}
	if o.MaxSpoolBytes > 0 && n > o.MaxSpoolBytes {
		return fail(floe.E(floe.Invalid, "input", "the input is larger than %d bytes", o.MaxSpoolBytes))
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return tmp, nil
}

// ctxReader stops reading when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readSample returns up to DefaultSampleBytes of br without consuming them,
// and whether that is the whole input.
func readSample(br *bufio.Reader) ([]byte, io.Reader, bool, error) {
	// Small inputs (micro-batches) allocate only what they hold.
	buf, err := io.ReadAll(io.LimitReader(br, DefaultSampleBytes))
	if err != nil {
		return nil, nil, false, err
	}
	complete := len(buf) < DefaultSampleBytes
	if !complete {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			complete = true
		}
	}
	return buf, io.MultiReader(bytes.NewReader(buf), br), complete, nil
}

// targetType is the Arrow type a CSV or NDJSON column named name is read
// as when the target schema has that column: its type if the reader can
// parse it, else nil (read as inferred, cast later).
func targetType(target *iceberg.Schema, name string, csvReader bool) arrow.DataType {
	if target == nil {
		return nil
	}
	f, ok := target.FindFieldByName(name)
	if !ok {
		if f, ok = target.FindFieldByNameCaseInsensitive(name); !ok {
			return nil
		}
	}
	if _, nested := f.Type.(iceberg.NestedType); nested && csvReader {
		return nil
	}
	dt, err := table.TypeToArrowType(f.Type, false, false)
	if err != nil {
		return nil
	}
	switch dt.ID() {
	case arrow.BOOL, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.TIMESTAMP,
		arrow.STRING, arrow.DECIMAL128:
		return dt
	case arrow.STRUCT, arrow.LIST, arrow.MAP:
		if !csvReader {
			return dt
		}
	}
	return nil
}

func openCSV(br *bufio.Reader, comma rune, o ReadOptions) (array.RecordReader, error) {
	buf, rest, complete, err := readSample(br)
	if err != nil {
		return nil, err
	}
	s, err := sampleCSV(buf, complete, comma, o.SampleRows)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(s.header))
	for i, h := range s.header {
		dt := targetType(o.Target, h, true)
		if dt == nil {
			dt = s.types[i]
		}
		fields[i] = arrow.Field{Name: h, Type: dt, Nullable: true}
	}
	sc := arrow.NewSchema(fields, nil)
	return newCSVReader(rest, sc, comma, batchFor(buf, complete, o.BatchSize), o.Mem, o.Name), nil
}

func openNDJSON(br *bufio.Reader, o ReadOptions) (array.RecordReader, error) {
	buf, rest, complete, err := readSample(br)
	if err != nil {
		return nil, err
	}
	fields, err := sampleNDJSON(buf, complete, o.SampleRows)
	if err != nil {
		return nil, err
	}
	for i := range fields {
		if dt := targetType(o.Target, fields[i].Name, false); dt != nil {
			fields[i].Type = dt
		}
	}
	sc := arrow.NewSchema(fields, nil)
	return newNDJSONReader(rest, sc, batchFor(buf, complete, o.BatchSize), o.MaxLineBytes, o.Mem, o.Name), nil
}

// batchFor returns the rows per batch for a line-based input whose sample
// is buf: size, or fewer when the sample is the whole input (complete) and
// has fewer lines. The readers reserve a whole batch's room per column
// before reading, so a one-row ingest read with the default batch reserved
// 64Ki rows' (megabytes) for one.
func batchFor(buf []byte, complete bool, size int) int {
	if !complete {
		return size
	}
	return max(1, min(size, bytes.Count(buf, []byte{'\n'})+1))
}

func openParquet(ctx context.Context, ra readAtSeeker, o ReadOptions) (array.RecordReader, func() error, error) {
	pf, err := file.NewParquetReader(ra)
	if err != nil {
		return nil, nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(o.BatchSize)}, o.Mem)
	if err != nil {
		pf.Close()
		return nil, nil, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		pf.Close()
		return nil, nil, err
	}
	return rr, pf.Close, nil
}

// arrowFileReader reads the record batches of an Arrow IPC file in order.
type arrowFileReader struct {
	f    *ipc.FileReader
	i    int
	cur  arrow.RecordBatch
	err  error
	refs atomic.Int64
}

func openArrowFile(ra readAtSeeker, o ReadOptions) (array.RecordReader, error) {
	f, err := ipc.NewFileReader(ra, ipc.WithAllocator(o.Mem), ipc.WithEnsureNativeEndian(true))
	if err != nil {
		return nil, err
	}
	r := &arrowFileReader{f: f}
	r.refs.Store(1)
	return r, nil
}

func (r *arrowFileReader) Schema() *arrow.Schema { return r.f.Schema() }

func (r *arrowFileReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || r.i >= r.f.NumRecords() {
		return false
	}
	rec, err := r.f.RecordBatchAt(r.i)
	if err != nil {
		r.err = err
		return false
	}
	r.i++
	r.cur = rec
	return true
}

func (r *arrowFileReader) RecordBatch() arrow.RecordBatch { return r.cur }

//lint:ignore SA1019 arrow.Record is what the RecordReader interface still requires.
func (r *arrowFileReader) Record() arrow.Record { return r.cur }

func (r *arrowFileReader) Err() error { return r.err }

func (r *arrowFileReader) Retain() { r.refs.Add(1) }

func (r *arrowFileReader) Release() {
	if r.refs.Add(-1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		_ = r.f.Close()
	}
}
