package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floe-lake/floe"
)

// The CSV and NDJSON record readers of this file read like Arrow's own
// (the same value syntax: strconv numbers and booleans, YYYY-MM-DD dates,
// Arrow's timestamp strings, the empty field as null), but a value that
// does not parse, a row with the wrong number of fields or a line that is
// not JSON fails with an error naming the input, the line, the data row
// and the column.

// DefaultMaxLineBytes bounds one NDJSON line (ReadOptions.MaxLineBytes).
const DefaultMaxLineBytes = 64 << 20

// requestBody names an input without a file name in messages.
const requestBody = "request body"

// inputName is how messages name the input called name.
func inputName(name string) string {
	if name == "" {
		return requestBody
	}
	return name
}

// shown quotes a value for a message, cut to a readable length.
func shown(v string) string {
	const limit = 80
	if len(v) > limit {
		return strconv.Quote(v[:limit]) + "..."
	}
	return strconv.Quote(v)
}

// typeName names an Arrow type as the Iceberg type it stands for.
func typeName(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "long"
	case *arrow.Float32Type:
		return "float"
	case *arrow.Float64Type:
		return "double"
	case *arrow.Date32Type:
		return "date (YYYY-MM-DD)"
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "timestamptz"
		}
		return "timestamp"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d, %d)", t.Precision, t.Scale)
	case *arrow.StringType:
		return "string"
	}
	return dt.String()
}

// locatedError is the Invalid error of a bad value or row.
func locatedError(where string, format string, args ...any) error {
	return floe.E(floe.Invalid, "input", "%s: %s", where, fmt.Sprintf(format, args...))
}

// csvConverter appends one field's text to its column builder.
type csvConverter func(string) error

// csvConverterFor returns the converter into b, following Arrow's CSV
// reader (the empty string is null).
func csvConverterFor(b array.Builder) csvConverter {
	switch dt := b.Type().(type) {
	case *arrow.BooleanType:
		bb := b.(*array.BooleanBuilder)
		return func(s string) error {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return err
			}
			bb.Append(v)
			return nil
		}
	case *arrow.Int32Type:
		bb := b.(*array.Int32Builder)
		return func(s string) error {
			v, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return err
			}
			bb.Append(int32(v))
			return nil
		}
	case *arrow.Int64Type:
		bb := b.(*array.Int64Builder)
		return func(s string) error {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return err
			}
			bb.Append(v)
			return nil
		}
	case *arrow.Float32Type:
		bb := b.(*array.Float32Builder)
		return func(s string) error {
			v, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return err
			}
			bb.Append(float32(v))
			return nil
		}
	case *arrow.Float64Type:
		bb := b.(*array.Float64Builder)
		return func(s string) error {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return err
			}
			bb.Append(v)
			return nil
		}
	case *arrow.Date32Type:
		bb := b.(*array.Date32Builder)
		return func(s string) error {
			tm, err := time.Parse("2006-01-02", s)
			if err != nil {
				return err
			}
			bb.Append(arrow.Date32FromTime(tm))
			return nil
		}
	case *arrow.Decimal128Type:
		bb := b.(*array.Decimal128Builder)
		return func(s string) error {
			v, err := decimal128.FromString(s, dt.Precision, dt.Scale)
			if err != nil {
				return err
			}
			bb.Append(v)
			return nil
		}
	case *arrow.StringType:
		bb := b.(*array.StringBuilder)
		return func(s string) error { bb.Append(s); return nil }
	}
	// Timestamps and anything else: the builder's own string syntax.
	return b.AppendValueFromString
}

// csvReader reads CSV (or TSV) rows into record batches of up to chunk rows.
type csvReader struct {
	refs   atomic.Int64
	r      *csv.Reader
	name   string
	schema *arrow.Schema
	bld    *array.RecordBuilder
	conv   []csvConverter
	chunk  int
	rows   int64 // data rows read
	cur    arrow.RecordBatch
	err    error
	done   bool
}

// newCSVReader reads r, whose first record is the header, as sc (one
// field per CSV column, in order).
func newCSVReader(r io.Reader, sc *arrow.Schema, comma rune, chunk int, mem memory.Allocator, name string) *csvReader {
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.ReuseRecord = true
	cr.FieldsPerRecord = sc.NumFields()
	c := &csvReader{r: cr, name: inputName(name), schema: sc, bld: array.NewRecordBuilder(mem, sc), chunk: max(1, chunk)}
	c.refs.Store(1)
	c.conv = make([]csvConverter, sc.NumFields())
	for i := range c.conv {
		c.conv[i] = csvConverterFor(c.bld.Field(i))
	}
	if _, err := cr.Read(); err != nil && !errors.Is(err, io.EOF) { // the header (sampled already)
		c.err = c.readError(err)
	}
	return c
}

// readError locates an error of the CSV tokenizer.
func (c *csvReader) readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		where := fmt.Sprintf("%s line %d (row %d)", c.name, pe.StartLine, c.rows+1)
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return locatedError(where, "the row has a different number of fields than the header's %d", c.schema.NumFields())
		}
		return locatedError(where, "%s", pe.Err)
	}
	return err
}

func (c *csvReader) Schema() *arrow.Schema { return c.schema }

func (c *csvReader) Next() bool {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	if c.err != nil || c.done {
		return false
	}
	n := 0
	for n < c.chunk {
		rec, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			c.done = true
			break
		}
		if err != nil {
			c.err = c.readError(err)
			return false
		}
		if n == 0 {
			c.bld.Reserve(c.chunk)
		}
		for i, s := range rec {
			if s == "" {
				c.bld.Field(i).AppendNull()
				continue
			}
			if err := c.conv[i](s); err != nil {
				line, _ := c.r.FieldPos(i)
				f := c.schema.Field(i)
				c.err = locatedError(fmt.Sprintf("%s line %d (row %d), column %q", c.name, line, c.rows+1, f.Name),
					"%s is not a valid %s", shown(s), typeName(f.Type))
				return false
			}
		}
		c.rows++
		n++
	}
	if n == 0 {
		return false
	}
	c.cur = c.bld.NewRecordBatch()
	return true
}

func (c *csvReader) RecordBatch() arrow.RecordBatch { return c.cur }

//lint:ignore SA1019 arrow.Record is what the RecordReader interface still requires.
func (c *csvReader) Record() arrow.Record { return c.cur }

func (c *csvReader) Err() error { return c.err }

func (c *csvReader) Retain() { c.refs.Add(1) }

func (c *csvReader) Release() {
	if c.refs.Add(-1) == 0 {
		if c.cur != nil {
			c.cur.Release()
			c.cur = nil
		}
		c.bld.Release()
	}
}

// ndjsonReader reads NDJSON, one JSON object per line (blank lines
// skipped), into record batches of up to chunk rows.
type ndjsonReader struct {
	refs    atomic.Int64
	br      *bufio.Reader
	name    string
	schema  *arrow.Schema
	bld     *array.RecordBuilder
	mem     memory.Allocator
	chunk   int
	maxLine int
	line    int   // lines read
	rows    int64 // data rows read
	buf     []byte
	cur     arrow.RecordBatch
	err     error
	done    bool
}

func newNDJSONReader(r io.Reader, sc *arrow.Schema, chunk, maxLine int, mem memory.Allocator, name string) *ndjsonReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	j := &ndjsonReader{br: bufio.NewReaderSize(r, 64<<10), name: inputName(name), schema: sc, bld: array.NewRecordBuilder(mem, sc),
		mem: mem, chunk: max(1, chunk), maxLine: maxLine}
	j.refs.Store(1)
	return j
}

// readLine returns the next line without its line break (nil at the end),
// holding at most maxLine bytes.
func (j *ndjsonReader) readLine() ([]byte, error) {
	j.buf = j.buf[:0]
	for {
		frag, err := j.br.ReadSlice('\n')
		if len(j.buf)+len(frag) > j.maxLine+1 {
			return nil, locatedError(fmt.Sprintf("%s line %d", j.name, j.line+1), "the line is longer than %d bytes", j.maxLine)
		}
		j.buf = append(j.buf, frag...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(j.buf) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		j.line++
		return bytes.TrimRight(j.buf, "\r\n"), nil
	}
}

func (j *ndjsonReader) Schema() *arrow.Schema { return j.schema }

func (j *ndjsonReader) Next() bool {
	if j.cur != nil {
		j.cur.Release()
		j.cur = nil
	}
	if j.err != nil || j.done {
		return false
	}
	n := 0
	for n < j.chunk {
		line, err := j.readLine()
		if errors.Is(err, io.EOF) {
			j.done = true
			break
		}
		if err != nil {
			j.err = err
			return false
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if n == 0 {
			j.bld.Reserve(j.chunk)
		}
		if err := j.unmarshal(line); err != nil {
			j.err = j.locate(line, err)
			return false
		}
		j.rows++
		n++
	}
	if n == 0 {
		return false
	}
	j.cur = j.bld.NewRecordBatch()
	return true
}

// unmarshal appends the row of line. Arrow's decoder panics on some
// malformed JSON (a trailing comma in an object): line is checked first,
// and a panic still left is an error, never the server's end.
func (j *ndjsonReader) unmarshal(line []byte) (err error) {
	if !json.Valid(line) {
		return errors.New("invalid JSON")
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read the object: %v", p)
		}
	}()
	return j.bld.UnmarshalJSON(line)
}

// locate explains why line did not load: not JSON, not an object, or the
// first column whose value does not fit its type.
func (j *ndjsonReader) locate(line []byte, cause error) error {
	where := fmt.Sprintf("%s line %d (row %d)", j.name, j.line, j.rows+1)
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return locatedError(where, "invalid JSON: %s", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return locatedError(where, "not a JSON object (NDJSON has one object per line)")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err == nil {
		for _, f := range j.schema.Fields() {
			val, ok := raw[f.Name]
			if !ok {
				continue
			}
			one, err := json.Marshal(map[string]json.RawMessage{f.Name: val})
			if err != nil {
				continue
			}
			b := array.NewRecordBuilder(j.mem, arrow.NewSchema([]arrow.Field{f}, nil))
			err = b.UnmarshalJSON(one)
			b.Release()
			if err != nil {
				return locatedError(fmt.Sprintf("%s, column %q", where, f.Name), "%s is not a valid %s", shownJSON(val), typeName(f.Type))
			}
		}
	}
	return locatedError(where, "%s", trimMsg(cause.Error()))
}

// shownJSON shows a raw JSON value for a message.
func shownJSON(v json.RawMessage) string {
	const limit = 80
	if len(v) > limit {
		return string(v[:limit]) + "..."
	}
	return string(v)
}

func (j *ndjsonReader) RecordBatch() arrow.RecordBatch { return j.cur }

//lint:ignore SA1019 arrow.Record is what the RecordReader interface still requires.
func (j *ndjsonReader) Record() arrow.Record { return j.cur }

func (j *ndjsonReader) Err() error { return j.err }

func (j *ndjsonReader) Retain() { j.refs.Add(1) }

func (j *ndjsonReader) Release() {
	if j.refs.Add(-1) == 0 {
		if j.cur != nil {
			j.cur.Release()
			j.cur = nil
		}
		j.bld.Release()
	}
}
