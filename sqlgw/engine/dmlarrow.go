package engine

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// rowBatch is how many rows go into one Arrow record batch.
const rowBatch = 16384

// rowReader is an array.RecordReader over the rows of a DuckDB query whose
// columns are those of schema, in order and already cast to its types (the
// Arrow schema of an Iceberg table). It enforces the schema's NOT NULL
// columns.
type rowReader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	rows   driver.Rows
	bld    *array.RecordBuilder
	buf    []driver.Value
	cur    arrow.RecordBatch
	err    error
	n      int64
	done   bool
}

var _ array.RecordReader = (*rowReader)(nil)

func newRowReader(schema *arrow.Schema, rows driver.Rows) *rowReader {
	r := &rowReader{schema: schema, rows: rows, bld: array.NewRecordBuilder(memory.DefaultAllocator, schema),
		buf: make([]driver.Value, schema.NumFields())}
	r.refs.Store(1)
	return r
}

// Retain implements array.RecordReader.
func (r *rowReader) Retain() { r.refs.Add(1) }

// Release implements array.RecordReader.
func (r *rowReader) Release() {
	if r.refs.Add(-1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.bld.Release()
	}
}

// Schema implements array.RecordReader.
func (r *rowReader) Schema() *arrow.Schema { return r.schema }

// Next implements array.RecordReader.
func (r *rowReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done || r.err != nil {
		return false
	}
	for range rowBatch {
		if err := r.rows.Next(r.buf); err != nil {
			if errors.Is(err, io.EOF) {
				r.done = true
				break
			}
			r.err = err
			return false
		}
		for i, v := range r.buf {
			if err := appendValue(r.bld.Field(i), r.schema.Field(i), v); err != nil {
				r.err = err
				return false
			}
		}
		r.n++
	}
	rec := r.bld.NewRecordBatch()
	if rec.NumRows() == 0 {
		rec.Release()
		return false
	}
	r.cur = rec
	return true
}

// RecordBatch implements array.RecordReader.
func (r *rowReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record implements array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *rowReader) Record() arrow.RecordBatch { return r.cur }

// Err implements array.RecordReader.
func (r *rowReader) Err() error { return r.err }

// notNullError is a NULL for a required column.
func notNullError(col string) error {
	return &pgwire.Error{Code: "23502", Message: fmt.Sprintf("null value in column %q violates not-null constraint", col)}
}

// appendValue appends one value DuckDB returned to a builder of field f.
func appendValue(b array.Builder, f arrow.Field, v any) error {
	if v == nil {
		if !f.Nullable {
			return notNullError(f.Name)
		}
		b.AppendNull()
		return nil
	}
	bad := func() error {
		return fmt.Errorf("engine: column %q: cannot store a %T in %s", f.Name, v, f.Type)
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Decimal128Builder:
		x, ok := v.(duckdb.Decimal)
		if !ok || x.Value == nil {
			return bad()
		}
		dt := f.Type.(*arrow.Decimal128Type)
		val := x.Value
		if int32(x.Scale) != dt.Scale {
			return fmt.Errorf("engine: column %q: decimal scale %d, want %d", f.Name, x.Scale, dt.Scale)
		}
		if val.CmpAbs(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.Precision)), nil)) >= 0 {
			return &pgwire.Error{Code: pgwire.CodeNumericValueOutOfRange, Message: fmt.Sprintf("value out of range for column %q", f.Name)}
		}
		b.Append(decimal128.FromBigInt(val))
	case *array.Date32Builder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		y, m, d := x.Date()
		b.Append(arrow.Date32FromTime(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)))
	case *array.Time64Builder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		us := (int64(x.Hour())*3600+int64(x.Minute())*60+int64(x.Second()))*1_000_000 + int64(x.Nanosecond()/1000)
		if f.Type.(*arrow.Time64Type).Unit == arrow.Nanosecond {
			us = us*1000 + int64(x.Nanosecond()%1000)
		}
		b.Append(arrow.Time64(us))
	case *array.TimestampBuilder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		switch f.Type.(*arrow.TimestampType).Unit {
		case arrow.Nanosecond:
			b.Append(arrow.Timestamp(x.UnixNano()))
		case arrow.Microsecond:
			b.Append(arrow.Timestamp(x.UnixMicro()))
		case arrow.Millisecond:
			b.Append(arrow.Timestamp(x.UnixMilli()))
		default:
			b.Append(arrow.Timestamp(x.Unix()))
		}
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.LargeStringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *extensions.UUIDBuilder:
		x, ok := uuidBytes(v)
		if !ok {
			return bad()
		}
		b.AppendBytes(x)
	case *array.FixedSizeBinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		if w := f.Type.(*arrow.FixedSizeBinaryType).ByteWidth; len(x) != w {
			return &pgwire.Error{Code: "22001", Message: fmt.Sprintf("value for column %q has %d bytes, want %d", f.Name, len(x), w)}
		}
		b.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.MapBuilder:
		x, ok := v.(duckdb.OrderedMap)
		if !ok {
			return bad()
		}
		mt := f.Type.(*arrow.MapType)
		b.Append(true)
		keys, vals := x.Keys(), x.Values()
		for i := range keys {
			if err := appendValue(b.KeyBuilder(), mt.KeyField(), keys[i]); err != nil {
				return err
			}
			if err := appendValue(b.ItemBuilder(), mt.ItemField(), vals[i]); err != nil {
				return err
			}
		}
	case array.ListLikeBuilder:
		x, ok := v.([]any)
		if !ok {
			return bad()
		}
		lt, ok := f.Type.(arrow.ListLikeType)
		if !ok {
			return bad()
		}
		b.Append(true)
		for _, e := range x {
			if err := appendValue(b.ValueBuilder(), lt.ElemField(), e); err != nil {
				return err
			}
		}
	case *array.StructBuilder:
		x, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		st := f.Type.(*arrow.StructType)
		b.Append(true)
		for i, sf := range st.Fields() {
			if err := appendValue(b.FieldBuilder(i), sf, x[sf.Name]); err != nil {
				return err
			}
		}
	default:
		return unsupported("columns of type %s cannot be written through the SQL endpoint yet", f.Type)
	}
	return nil
}

// uuidBytes returns the 16 bytes of a UUID value DuckDB returned.
func uuidBytes(v any) ([16]byte, bool) {
	var out [16]byte
	switch x := v.(type) {
	case []byte:
		if len(x) != 16 {
			return out, false
		}
		copy(out[:], x)
		return out, true
	case duckdb.UUID:
		return [16]byte(x), true
	case *duckdb.UUID:
		return [16]byte(*x), true
	}
	return out, false
}
