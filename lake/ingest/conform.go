package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// InferSchema returns the Iceberg schema of a new table for data of Arrow
// schema sc: Arrow types without an Iceberg counterpart are widened
// (small and unsigned integers to int or long, half floats to float, time
// zones to UTC, nanosecond timestamps to microseconds, dictionaries to
// their values, null columns to string), and fields get fresh ids.
func InferSchema(sc *arrow.Schema) (*iceberg.Schema, error) {
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		nf, err := normalizeField(f)
		if err != nil {
			return nil, floe.E(floe.Invalid, "schema", "column %q: %s", f.Name, err)
		}
		fields[i] = nf
	}
	out, err := table.ArrowSchemaToIcebergWithFreshIDs(arrow.NewSchema(fields, nil), true)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot map the input's columns to Iceberg types: %s", err)
	}
	return out, nil
}

func normalizeField(f arrow.Field) (arrow.Field, error) {
	dt, err := normalizeType(f.Type)
	if err != nil {
		return f, err
	}
	return arrow.Field{Name: f.Name, Type: dt, Nullable: f.Nullable}, nil
}

// normalizeType maps an Arrow type to one that converts to Iceberg.
func normalizeType(dt arrow.DataType) (arrow.DataType, error) {
	switch t := dt.(type) {
	case *arrow.NullType:
		return typeString, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return arrow.PrimitiveTypes.Int32, nil
	case *arrow.Uint32Type, *arrow.Uint64Type:
		return arrow.PrimitiveTypes.Int64, nil
	case *arrow.Float16Type:
		return arrow.PrimitiveTypes.Float32, nil
	case *arrow.LargeStringType, *arrow.StringViewType:
		return typeString, nil
	case *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return arrow.BinaryTypes.Binary, nil
	case *arrow.Date64Type:
		return typeDate, nil
	case *arrow.Time32Type:
		return arrow.FixedWidthTypes.Time64us, nil
	case *arrow.Time64Type:
		return arrow.FixedWidthTypes.Time64us, nil
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return typeTimestampTz, nil
		}
		return typeTimestamp, nil
	case *arrow.DictionaryType:
		return normalizeType(t.ValueType)
	case *arrow.Decimal256Type:
		if t.Precision > 38 {
			return nil, fmt.Errorf("decimal precision %d is over Iceberg's 38", t.Precision)
		}
		return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}, nil
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			nf, err := normalizeField(f)
			if err != nil {
				return nil, err
			}
			fs[i] = nf
		}
		return arrow.StructOf(fs...), nil
	case arrow.ListLikeType:
		if _, ok := dt.(*arrow.MapType); ok {
			m := dt.(*arrow.MapType)
			k, err := normalizeType(m.KeyType())
			if err != nil {
				return nil, err
			}
			v, err := normalizeType(m.ItemType())
			if err != nil {
				return nil, err
			}
			return arrow.MapOf(k, v), nil
		}
		e, err := normalizeField(t.ElemField())
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(e), nil
	}
	return dt, nil
}

// conformer reads batches of a source and returns them in the Arrow schema
// of a table (with field ids): columns matched by name (exactly, else
// ignoring case), missing optional columns as nulls, values cast to the
// table's types. A column the table lacks, a missing required column, a
// null in a required column or a value that does not convert fails the
// read with a floe.Invalid error.
type conformer struct {
	src    array.RecordReader
	schema *arrow.Schema
	idx    []int // source column of each target column, -1 for none
	mem    memory.Allocator
	ctx    context.Context

	cur      arrow.RecordBatch
	err      error
	rows     atomic.Int64
	progress func(rows int64)
	// name is the input's file name for messages ("" for a request body).
	name string
	refs atomic.Int64
}

// newConformer matches the columns of src to those of tbl.
func newConformer(ctx context.Context, src array.RecordReader, sc *iceberg.Schema, mem memory.Allocator) (*conformer, error) {
	target, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("ingest: table schema: %w", err)
	}
	in := src.Schema()
	c := &conformer{src: src, schema: target, idx: make([]int, target.NumFields()), mem: mem, ctx: ctx}
	c.refs.Store(1)
	used := make([]bool, in.NumFields())
	for i, f := range target.Fields() {
		c.idx[i] = -1
		j := indexOf(in, f.Name)
		if j < 0 {
			if !f.Nullable {
				return nil, floe.E(floe.Invalid, "input", "the input has no column %q, which the table requires", f.Name)
			}
			continue
		}
		c.idx[i], used[j] = j, true
	}
	var extra []string
	for j, u := range used {
		if !u {
			extra = append(extra, in.Field(j).Name)
		}
	}
	if len(extra) > 0 {
		var have []string
		for _, f := range target.Fields() {
			have = append(have, f.Name)
		}
		return nil, floe.E(floe.Invalid, "input", "the input has columns the table does not: %s (table columns: %s)",
			strings.Join(extra, ", "), strings.Join(have, ", "))
	}
	return c, nil
}

// indexOf finds a column by name, exactly, else ignoring case.
func indexOf(sc *arrow.Schema, name string) int {
	if is := sc.FieldIndices(name); len(is) > 0 {
		return is[0]
	}
	for i, f := range sc.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func (c *conformer) Schema() *arrow.Schema { return c.schema }

func (c *conformer) Next() bool {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	if c.err != nil {
		return false
	}
	if !c.src.Next() {
		if err := c.src.Err(); err != nil {
			c.err = err
		}
		return false
	}
	rec := c.src.RecordBatch()
	out, err := c.convert(rec)
	var re *rowError
	switch {
	case errors.As(err, &re):
		c.err = floe.E(floe.Invalid, "input", "%s row %d, column %q: %s", inputName(c.name), c.rows.Load()+re.row+1, re.column, re.msg)
		return false
	case err != nil:
		c.err = floe.E(floe.Invalid, "input", "%s rows %d to %d: %s", inputName(c.name), c.rows.Load()+1, c.rows.Load()+rec.NumRows(), err)
		return false
	}
	c.cur = out
	n := c.rows.Add(rec.NumRows())
	if c.progress != nil {
		c.progress(n)
	}
	return true
}

func (c *conformer) convert(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	cols := make([]arrow.Array, len(c.idx))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, j := range c.idx {
		f := c.schema.Field(i)
		if j < 0 {
			cols[i] = array.MakeArrayOfNull(c.mem, f.Type, int(n))
			continue
		}
		col := rec.Column(j)
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols[i] = col
		} else {
			opts := compute.SafeCastOptions(f.Type)
			opts.AllowTimeTruncate = true
			cast, err := compute.CastArray(compute.WithAllocator(c.ctx, c.mem), col, opts)
			if err != nil {
				if row, ok := c.failingRow(col, opts); ok {
					return nil, &rowError{row: row, column: f.Name, msg: fmt.Sprintf("%s cannot be converted to %s: %s",
						shown(col.ValueStr(int(row))), typeName(f.Type), trimMsg(err.Error()))}
				}
				return nil, fmt.Errorf("column %q: cannot convert %s to %s: %s", f.Name, col.DataType(), f.Type, trimMsg(err.Error()))
			}
			cols[i] = cast
		}
		if !f.Nullable && cols[i].NullN() > 0 {
			for row := range cols[i].Len() {
				if cols[i].IsNull(row) {
					return nil, &rowError{row: int64(row), column: f.Name, msg: fmt.Sprintf("the column is required, but the value is missing (%d in this batch)", cols[i].NullN())}
				}
			}
		}
	}
	return array.NewRecordBatch(c.schema, cols, n), nil
}

// rowError is a value of one row that does not fit its column; row
// counts from 0 in the batch.
type rowError struct {
	row    int64
	column string
	msg    string
}

func (e *rowError) Error() string {
	return fmt.Sprintf("row %d, column %q: %s", e.row+1, e.column, e.msg)
}

// failingRow finds the first value of col that does not cast (a failed
// batch only: one cast per value).
func (c *conformer) failingRow(col arrow.Array, opts *compute.CastOptions) (int64, bool) {
	for i := range col.Len() {
		one := array.NewSlice(col, int64(i), int64(i+1))
		cast, err := compute.CastArray(compute.WithAllocator(c.ctx, c.mem), one, opts)
		one.Release()
		if err != nil {
			return int64(i), true
		}
		cast.Release()
	}
	return 0, false
}

func (c *conformer) RecordBatch() arrow.RecordBatch { return c.cur }

//lint:ignore SA1019 arrow.Record is what the RecordReader interface still requires.
func (c *conformer) Record() arrow.Record { return c.cur }

func (c *conformer) Err() error { return c.err }

func (c *conformer) Retain() { c.refs.Add(1) }

func (c *conformer) Release() {
	if c.refs.Add(-1) == 0 && c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
}
