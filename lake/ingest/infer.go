package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Inferred column types. The inference of a text column (CSV) keeps every
// type all sampled values parse as, and picks the first in this order.
var (
	typeInt64       = arrow.PrimitiveTypes.Int64
	typeFloat64     = arrow.PrimitiveTypes.Float64
	typeBool        = arrow.FixedWidthTypes.Boolean
	typeDate        = arrow.FixedWidthTypes.Date32
	typeTimestamp   = &arrow.TimestampType{Unit: arrow.Microsecond}
	typeTimestampTz = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	typeString      = arrow.BinaryTypes.String
)

const (
	canInt uint8 = 1 << iota
	canFloat
	canBool
	canDate
	canTS
	canTSTz
	canAll = canInt | canFloat | canBool | canDate | canTS | canTSTz
)

// textColumn accumulates what the sampled values of a text column parse as.
type textColumn struct {
	can  uint8
	seen bool // a non-null value was sampled
}

func (c *textColumn) add(v string) {
	if v == "" {
		return
	}
	if !c.seen {
		c.can, c.seen = canAll, true
	}
	c.can &= textKinds(v, c.can)
}

// textKinds returns the subset of can that v parses as.
func textKinds(v string, can uint8) uint8 {
	var out uint8
	if can&canInt != 0 {
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			out |= canInt
		}
	}
	if can&canFloat != 0 {
		if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXpP_") {
			out |= canFloat
		}
	}
	if can&canBool != 0 {
		if l := strings.ToLower(v); l == "true" || l == "false" {
			out |= canBool
		}
	}
	if can&canDate != 0 {
		if _, err := time.Parse(time.DateOnly, v); err == nil {
			out |= canDate
		}
	}
	if can&(canTS|canTSTz) != 0 && len(v) > len("2006-01-02") {
		if _, zone, err := arrow.TimestampFromStringInLocation(v, arrow.Microsecond, time.UTC); err == nil {
			if zone {
				out |= can & canTSTz
			} else {
				out |= can & canTS
			}
		}
	}
	return out
}

// typ is the inferred Arrow type: string when nothing narrower fits or no
// value was sampled.
func (c *textColumn) typ() arrow.DataType {
	switch {
	case !c.seen:
		return typeString
	case c.can&canInt != 0:
		return typeInt64
	case c.can&canFloat != 0:
		return typeFloat64
	case c.can&canBool != 0:
		return typeBool
	case c.can&canDate != 0:
		return typeDate
	case c.can&canTS != 0:
		return typeTimestamp
	case c.can&canTSTz != 0:
		return typeTimestampTz
	}
	return typeString
}

// csvSample is the start of a CSV input: its header and the inferred type
// of each column.
type csvSample struct {
	header []string
	types  []arrow.DataType
}

// sampleCSV parses the header and up to maxRows rows of buf (the first
// bytes of the input; complete is whether buf is all of it) and infers
// column types.
func sampleCSV(buf []byte, complete bool, comma rune, maxRows int) (*csvSample, error) {
	r := csv.NewReader(bytes.NewReader(buf))
	r.Comma = comma
	r.ReuseRecord = false
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errf("the input is empty: a CSV input needs a header row")
		}
		return nil, errf("CSV header: %s", err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		if h == "" {
			return nil, errf("CSV header: column %d has no name", i+1)
		}
		if seen[strings.ToLower(h)] {
			return nil, errf("CSV header: column %q appears twice", h)
		}
		seen[strings.ToLower(h)] = true
	}
	cols := make([]textColumn, len(header))
	var rows [][]string
	for len(rows) < maxRows+1 {
		rec, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			// The sample may end inside a record; a bad record is
			// reported by the reader, with its file, line, row and column.
			break
		}
		rows = append(rows, rec)
	}
	if !complete && len(rows) > 0 {
		rows = rows[:len(rows)-1] // may be cut short by the end of the sample
	}
	if len(rows) > maxRows {
		rows = rows[:maxRows]
	}
	for _, rec := range rows {
		for i := range min(len(rec), len(cols)) {
			cols[i].add(rec[i])
		}
	}
	s := &csvSample{header: header, types: make([]arrow.DataType, len(cols))}
	for i := range cols {
		s.types[i] = cols[i].typ()
	}
	return s, nil
}

// jsonKind is the inferred type of a JSON value or of the values of a key.
type jsonKind struct {
	kind   byte // 0 null, 'b' bool, 'i' int, 'f' float, 's' string, 'o' object, 'a' array
	text   textColumn
	fields map[string]*jsonKind // objects
	order  []string             // objects: keys in first-seen order
	elem   *jsonKind            // arrays
	mixed  bool                 // incompatible values: string
}

// maxJSONDepth bounds the nesting of inferred objects and arrays.
const maxJSONDepth = 32

func (k *jsonKind) add(v any, depth int) {
	if v == nil || k.mixed {
		return
	}
	if depth > maxJSONDepth {
		k.mixed = true
		return
	}
	var kind byte
	switch n := v.(type) {
	case bool:
		kind = 'b'
	case json.Number:
		kind = 'i'
		if _, err := n.Int64(); err != nil {
			kind = 'f'
		}
	case string:
		kind = 's'
	case *object:
		kind = 'o'
	case []any:
		kind = 'a'
	default:
		k.mixed = true
		return
	}
	switch {
	case k.kind == 0:
		k.kind = kind
	case k.kind == kind:
	case k.kind == 'i' && kind == 'f', k.kind == 'f' && kind == 'i':
		k.kind = 'f'
	default:
		k.mixed = true
		return
	}
	switch x := v.(type) {
	case string:
		k.text.add(x)
	case *object:
		if k.fields == nil {
			k.fields = map[string]*jsonKind{}
		}
		for i, key := range x.keys {
			f := k.fields[key]
			if f == nil {
				f = &jsonKind{}
				k.fields[key] = f
				k.order = append(k.order, key)
			}
			f.add(x.vals[i], depth+1)
		}
	case []any:
		if k.elem == nil {
			k.elem = &jsonKind{}
		}
		for _, e := range x {
			k.elem.add(e, depth+1)
		}
	}
}

// typ is the Arrow type of the inferred values.
func (k *jsonKind) typ() arrow.DataType {
	if k.mixed {
		return typeString
	}
	switch k.kind {
	case 'b':
		return typeBool
	case 'i':
		return typeInt64
	case 'f':
		return typeFloat64
	case 's':
		// Only dates and timestamps are read from JSON strings.
		switch t := k.text.typ(); t {
		case typeDate, typeTimestamp, typeTimestampTz:
			return t
		}
		return typeString
	case 'o':
		if len(k.order) == 0 {
			return typeString
		}
		fs := make([]arrow.Field, len(k.order))
		for i, key := range k.order {
			fs[i] = arrow.Field{Name: key, Type: k.fields[key].typ(), Nullable: true}
		}
		return arrow.StructOf(fs...)
	case 'a':
		if k.elem == nil || k.elem.kind == 0 && !k.elem.mixed {
			return arrow.ListOf(typeString)
		}
		return arrow.ListOf(k.elem.typ())
	}
	return typeString
}

// sampleNDJSON infers the columns of up to maxRows objects of buf (the
// first bytes of the input; complete is whether buf is all of it): the
// keys in the order they first appear, each with its inferred type.
func sampleNDJSON(buf []byte, complete bool, maxRows int) ([]arrow.Field, error) {
	if t := bytes.TrimLeft(buf, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '[' {
		return nil, errf("the input is a JSON array: send NDJSON, one JSON object per line")
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.UseNumber()
	root := &jsonKind{kind: 'o'}
	n := 0
	for n < maxRows {
		v, err := decodeOrdered(dec, 0)
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 || errors.Is(err, io.EOF) && dec.InputOffset() == 0 {
				break
			}
			if !complete || n > 0 {
				// The sample ends inside an object, or a bad line follows
				// good ones: the reader reports it with its line and row.
				break
			}
			return nil, errf("NDJSON object %d: %s", n+1, err)
		}
		obj, ok := v.(*object)
		if !ok && n > 0 {
			break // reported by the reader
		}
		if !ok {
			return nil, errf("NDJSON line %d is not a JSON object", n+1)
		}
		root.add(obj, 0)
		n++
	}
	if len(root.order) == 0 {
		return nil, errEmptyJSON
	}
	st := root.typ().(*arrow.StructType)
	return st.Fields(), nil
}

// object is a decoded JSON object with its keys in input order.
type object struct {
	keys []string
	vals []any
}

// decodeOrdered decodes the next JSON value of dec like Decode into an
// any (numbers as json.Number), except that objects become *object.
func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > 2*maxJSONDepth {
		return nil, errf("JSON nested deeper than %d levels", 2*maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &object{}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, unexpected(err)
			}
			key, ok := kt.(string)
			if !ok {
				return nil, errf("object key %v is not a string", kt)
			}
			if seen[key] {
				return nil, errf("key %q appears twice in one object", key)
			}
			seen[key] = true
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, unexpected(err)
			}
			o.keys, o.vals = append(o.keys, key), append(o.vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, unexpected(err)
		}
		return o, nil
	case '[':
		var a []any
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, unexpected(err)
			}
			a = append(a, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, unexpected(err)
		}
		return a, nil
	}
	return nil, errf("unexpected %q", d)
}

// unexpected turns an io.EOF inside a value into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// errEmptyJSON is the error of an NDJSON input without objects.
var errEmptyJSON = parseError("the input holds no JSON object with a key")

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
