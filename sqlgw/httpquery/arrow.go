package httpquery

import (
	"bufio"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// arrowBatchRows is the number of rows per record batch.
const arrowBatchRows = 8192

// arrowEncoder writes an Arrow IPC stream of record batches.
type arrowEncoder struct {
	cols   []pgwire.Column
	schema *arrow.Schema
	b      *array.RecordBuilder
	w      *ipc.Writer
	txt    *pgwire.TextEncoder
	n      int
}

// arrowType is the Arrow type of a column type (see the package doc).
func arrowType(oid uint32) arrow.DataType {
	switch oid {
	case pgwire.BoolOID:
		return arrow.FixedWidthTypes.Boolean
	case pgwire.Int2OID:
		return arrow.PrimitiveTypes.Int16
	case pgwire.Int4OID:
		return arrow.PrimitiveTypes.Int32
	case pgwire.Int8OID:
		return arrow.PrimitiveTypes.Int64
	case pgwire.OIDOID:
		return arrow.PrimitiveTypes.Uint32
	case pgwire.Float4OID:
		return arrow.PrimitiveTypes.Float32
	case pgwire.Float8OID:
		return arrow.PrimitiveTypes.Float64
	case pgwire.DateOID:
		return arrow.FixedWidthTypes.Date32
	case pgwire.TimestampOID:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case pgwire.TimestamptzOID:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case pgwire.ByteaOID:
		return arrow.BinaryTypes.Binary
	}
	return arrow.BinaryTypes.String
}

func newArrow(cols []pgwire.Column) (*arrowEncoder, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: arrowType(c.TypeOID), Nullable: true}
	}
	s := arrow.NewSchema(fields, nil)
	return &arrowEncoder{cols: cols, schema: s, b: array.NewRecordBuilder(memory.DefaultAllocator, s),
		txt: pgwire.NewTextEncoder(nil)}, nil
}

func (e *arrowEncoder) begin(w *bufio.Writer) error {
	e.w = ipc.NewWriter(w, ipc.WithSchema(e.schema))
	return nil
}

func (e *arrowEncoder) row(w *bufio.Writer, vals []any) error {
	for i, c := range e.cols {
		if err := e.append(e.b.Field(i), c, vals[i]); err != nil {
			return err
		}
	}
	e.n++
	if e.n == arrowBatchRows {
		return e.flush()
	}
	return nil
}

func (e *arrowEncoder) flush() error {
	rec := e.b.NewRecordBatch()
	defer rec.Release()
	e.n = 0
	return e.w.Write(rec)
}

// append appends v to the column builder fb.
func (e *arrowEncoder) append(fb array.Builder, c pgwire.Column, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	ok := true
	switch b := fb.(type) {
	case *array.BooleanBuilder:
		var x bool
		if x, ok = v.(bool); ok {
			b.Append(x)
		}
	case *array.Int16Builder:
		var n int64
		if n, ok = pgwire.IntValue(v); ok {
			b.Append(int16(n))
		}
	case *array.Int32Builder:
		var n int64
		if n, ok = pgwire.IntValue(v); ok {
			b.Append(int32(n))
		}
	case *array.Int64Builder:
		var n int64
		if n, ok = pgwire.IntValue(v); ok {
			b.Append(n)
		}
	case *array.Uint32Builder:
		var n int64
		if n, ok = pgwire.IntValue(v); ok {
			b.Append(uint32(n))
		}
	case *array.Float32Builder:
		var f float64
		if f, ok = pgwire.FloatValue(v); ok {
			b.Append(float32(f))
		}
	case *array.Float64Builder:
		var f float64
		if f, ok = pgwire.FloatValue(v); ok {
			b.Append(f)
		}
	case *array.Date32Builder:
		var t time.Time
		if t, ok = v.(time.Time); ok {
			y, m, d := t.Date()
			b.Append(arrow.Date32FromTime(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)))
		}
	case *array.TimestampBuilder:
		var t time.Time
		if t, ok = v.(time.Time); ok {
			if c.TypeOID == pgwire.TimestampOID { // wall clock, whatever the location
				y, mo, d := t.Date()
				t = time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
			}
			b.Append(arrow.Timestamp(t.UnixMicro()))
		}
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			b.Append(x)
		case string:
			b.AppendString(x)
		default:
			ok = false
		}
	case *array.StringBuilder:
		t, err := e.txt.Append(nil, c.TypeOID, v)
		if err != nil {
			return errValue(c, v)
		}
		b.BinaryBuilder.Append(t)
	}
	if !ok {
		return errValue(c, v)
	}
	return nil
}

func (e *arrowEncoder) end(*bufio.Writer) error {
	defer e.b.Release()
	if e.n > 0 {
		if err := e.flush(); err != nil {
			return err
		}
	}
	return e.w.Close()
}

// abort leaves the stream without its end-of-stream marker, so readers
// see it is incomplete.
func (e *arrowEncoder) abort(*bufio.Writer, error) { e.b.Release() }
