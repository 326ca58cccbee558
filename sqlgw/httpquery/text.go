package httpquery

import (
	"bufio"
	"encoding/json"
	"math"
	"strconv"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// ndjsonEncoder writes one JSON object per row, keyed by column name.
type ndjsonEncoder struct {
	cols []pgwire.Column
	keys [][]byte // `"name":` per column, with a leading comma after the first
	txt  *pgwire.TextEncoder
	buf  []byte
}

func newNDJSON(cols []pgwire.Column) *ndjsonEncoder {
	e := &ndjsonEncoder{cols: cols, txt: pgwire.NewTextEncoder(nil)}
	for i, c := range cols {
		k, _ := json.Marshal(c.Name)
		if i > 0 {
			k = append([]byte{','}, k...)
		}
		e.keys = append(e.keys, append(k, ':'))
	}
	return e
}

func (e *ndjsonEncoder) begin(*bufio.Writer) error { return nil }
func (e *ndjsonEncoder) end(*bufio.Writer) error   { return nil }

func (e *ndjsonEncoder) row(w *bufio.Writer, vals []any) error {
	b := append(e.buf[:0], '{')
	for i, c := range e.cols {
		b = append(b, e.keys[i]...)
		var err error
		if b, err = e.value(b, c, vals[i]); err != nil {
			return err
		}
	}
	b = append(b, '}', '\n')
	e.buf = b
	_, err := w.Write(b)
	return err
}

// value appends the JSON form of v (see the package doc).
func (e *ndjsonEncoder) value(b []byte, c pgwire.Column, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch c.TypeOID {
	case pgwire.BoolOID:
		if x, ok := v.(bool); ok {
			return strconv.AppendBool(b, x), nil
		}
	case pgwire.Int2OID, pgwire.Int4OID, pgwire.Int8OID, pgwire.OIDOID, pgwire.Float4OID, pgwire.Float8OID:
		t, err := e.txt.Append(nil, c.TypeOID, v)
		if err != nil {
			return nil, err
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return strconv.AppendQuote(b, string(t)), nil
		}
		if f, ok := v.(float32); ok && (math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)) {
			return strconv.AppendQuote(b, string(t)), nil
		}
		return append(b, t...), nil
	case pgwire.JSONOID, pgwire.JSONBOID:
		var raw []byte
		switch x := v.(type) {
		case string:
			raw = []byte(x)
		case []byte:
			raw = x
		case json.RawMessage:
			raw = x
		}
		if raw != nil && json.Valid(raw) {
			return append(b, raw...), nil
		}
	}
	t, err := e.txt.Append(nil, c.TypeOID, v)
	if err != nil {
		return nil, errValue(c, v)
	}
	s, _ := json.Marshal(string(t))
	return append(b, s...), nil
}

func (e *ndjsonEncoder) abort(w *bufio.Writer, err error) {
	line, _ := json.Marshal(map[string]any{"error": map[string]string{"message": publicMessage(err)}})
	_, _ = w.Write(append(line, '\n'))
}

// csvEncoder writes RFC 4180 CSV with a header row.
type csvEncoder struct {
	cols []pgwire.Column
	txt  *pgwire.TextEncoder
	buf  []byte
}

func newCSV(cols []pgwire.Column) *csvEncoder {
	return &csvEncoder{cols: cols, txt: pgwire.NewTextEncoder(nil)}
}

func (e *csvEncoder) begin(w *bufio.Writer) error {
	b := e.buf[:0]
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVField(b, []byte(c.Name), true)
	}
	e.buf = append(b, '\r', '\n')
	_, err := w.Write(e.buf)
	return err
}

func (e *csvEncoder) row(w *bufio.Writer, vals []any) error {
	b := e.buf[:0]
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, ',')
		}
		if vals[i] == nil {
			continue // NULL: an empty unquoted field
		}
		t, err := e.txt.Append(nil, c.TypeOID, vals[i])
		if err != nil {
			return errValue(c, vals[i])
		}
		b = appendCSVField(b, t, false)
	}
	e.buf = append(b, '\r', '\n')
	_, err := w.Write(e.buf)
	return err
}

func (e *csvEncoder) end(*bufio.Writer) error    { return nil }
func (e *csvEncoder) abort(*bufio.Writer, error) {}

// appendCSVField appends f, quoted when it is empty (so that it differs
// from NULL), when quote is set, or when it holds a comma, quote, CR or LF.
func appendCSVField(b, f []byte, quote bool) []byte {
	need := quote || len(f) == 0
	for _, c := range f {
		if c == ',' || c == '"' || c == '\r' || c == '\n' {
			need = true
			break
		}
	}
	if !need {
		return append(b, f...)
	}
	b = append(b, '"')
	for _, c := range f {
		if c == '"' {
			b = append(b, '"')
		}
		b = append(b, c)
	}
	return append(b, '"')
}
