package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// Type OIDs of the types pgwire encodes natively (PostgreSQL's pg_type).
const (
	BoolOID        uint32 = 16
	ByteaOID       uint32 = 17
	CharOID        uint32 = 18
	NameOID        uint32 = 19
	Int8OID        uint32 = 20
	Int2OID        uint32 = 21
	Int4OID        uint32 = 23
	TextOID        uint32 = 25
	OIDOID         uint32 = 26
	JSONOID        uint32 = 114
	Float4OID      uint32 = 700
	Float8OID      uint32 = 701
	UnknownOID     uint32 = 705
	BPCharOID      uint32 = 1042
	VarcharOID     uint32 = 1043
	DateOID        uint32 = 1082
	TimestampOID   uint32 = 1114
	TimestamptzOID uint32 = 1184
	NumericOID     uint32 = 1700
	UUIDOID        uint32 = 2950
	JSONBOID       uint32 = 3802
)

// Format codes.
const (
	TextFormat   int16 = 0
	BinaryFormat int16 = 1
)

var nativeOIDs = map[uint32]struct {
	size int16
	name string
}{
	BoolOID: {1, "boolean"}, ByteaOID: {-1, "bytea"}, CharOID: {1, "\"char\""}, NameOID: {64, "name"},
	Int8OID: {8, "bigint"}, Int2OID: {2, "smallint"}, Int4OID: {4, "integer"}, TextOID: {-1, "text"},
	OIDOID: {4, "oid"}, JSONOID: {-1, "json"}, Float4OID: {4, "real"}, Float8OID: {8, "double precision"},
	UnknownOID: {-2, "unknown"}, BPCharOID: {-1, "character"}, VarcharOID: {-1, "character varying"},
	DateOID: {4, "date"}, TimestampOID: {8, "timestamp without time zone"},
	TimestamptzOID: {8, "timestamp with time zone"}, NumericOID: {-1, "numeric"}, UUIDOID: {16, "uuid"},
	JSONBOID: {-1, "jsonb"},
}

// typeSize returns pg_type.typlen for oid (-1 when variable or unknown).
func typeSize(oid uint32) int16 {
	if t, ok := nativeOIDs[oid]; ok {
		return t.size
	}
	return -1
}

func typeName(oid uint32) string {
	if t, ok := nativeOIDs[oid]; ok {
		return t.name
	}
	return "oid " + strconv.FormatUint(uint64(oid), 10)
}

// codec encodes and decodes values for one connection (pgtype.Map is not
// safe for concurrent use).
type codec struct {
	m *pgtype.Map
}

func newCodec() *codec { return &codec{m: pgtype.NewMap()} }

// binaryOK reports whether values of oid can be sent in binary format.
func (c *codec) binaryOK(oid uint32) bool {
	if _, ok := nativeOIDs[oid]; ok && oid != UnknownOID {
		return true
	}
	t, ok := c.m.TypeForOID(oid)
	return ok && t.Codec.FormatSupported(pgtype.BinaryFormatCode)
}

// appendValue appends the encoding of a non-nil v as a value of type oid.
func (c *codec) appendValue(buf []byte, oid uint32, format int16, v any, loc *time.Location) ([]byte, error) {
	if format == BinaryFormat {
		return c.appendBinary(buf, oid, v)
	}
	return c.appendText(buf, oid, v, loc)
}

func (c *codec) appendText(buf []byte, oid uint32, v any, loc *time.Location) ([]byte, error) {
	switch oid {
	case BoolOID:
		b, ok := v.(bool)
		if !ok {
			return nil, badValue(oid, v)
		}
		if b {
			return append(buf, 't'), nil
		}
		return append(buf, 'f'), nil
	case Int2OID, Int4OID, Int8OID, OIDOID:
		n, err := intValue(oid, v)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(buf, n, 10), nil
	case Float4OID, Float8OID:
		f, ok := floatValue(v)
		if !ok {
			return nil, badValue(oid, v)
		}
		return appendFloat(buf, f, oid == Float4OID), nil
	case NumericOID:
		switch x := v.(type) {
		case string:
			return append(buf, x...), nil
		case float64:
			return appendNumericFloat(buf, x), nil
		case float32:
			return appendNumericFloat(buf, float64(x)), nil
		}
		if n, ok := toInt64(v); ok {
			return strconv.AppendInt(buf, n, 10), nil
		}
		return nil, badValue(oid, v)
	case ByteaOID:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			return nil, badValue(oid, v)
		}
		buf = append(buf, '\\', 'x')
		return hex.AppendEncode(buf, b), nil
	case DateOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		return appendDate(buf, t), nil
	case TimestampOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		return appendTimestamp(buf, t, false), nil
	case TimestamptzOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		return appendTimestamp(buf, t.In(loc), true), nil
	case UUIDOID:
		switch x := v.(type) {
		case [16]byte:
			return append(buf, uuid.UUID(x).String()...), nil
		case uuid.UUID:
			return append(buf, x.String()...), nil
		case string:
			u, err := uuid.Parse(x)
			if err != nil {
				return nil, badValue(oid, v)
			}
			return append(buf, u.String()...), nil
		}
		return nil, badValue(oid, v)
	}
	switch x := v.(type) {
	case string:
		return append(buf, x...), nil
	case []byte:
		return append(buf, x...), nil
	case json.RawMessage:
		return append(buf, x...), nil
	}
	if _, native := nativeOIDs[oid]; native {
		return nil, badValue(oid, v)
	}
	b, err := c.m.Encode(oid, pgtype.TextFormatCode, v, buf)
	if err != nil {
		return nil, badValueErr(oid, v, err)
	}
	return b, nil
}

func (c *codec) appendBinary(buf []byte, oid uint32, v any) ([]byte, error) {
	switch oid {
	case Int2OID, Int4OID, Int8OID, OIDOID:
		n, err := intValue(oid, v)
		if err != nil {
			return nil, err
		}
		switch oid {
		case Int2OID:
			return binary.BigEndian.AppendUint16(buf, uint16(n)), nil
		case Int8OID:
			return binary.BigEndian.AppendUint64(buf, uint64(n)), nil
		}
		return binary.BigEndian.AppendUint32(buf, uint32(n)), nil
	case Float4OID:
		f, ok := floatValue(v)
		if !ok {
			return nil, badValue(oid, v)
		}
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(f))), nil
	case Float8OID:
		f, ok := floatValue(v)
		if !ok {
			return nil, badValue(oid, v)
		}
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(f)), nil
	case NumericOID:
		if s, ok := v.(string); ok {
			var n pgtype.Numeric
			if err := n.Scan(s); err != nil {
				return nil, badValueErr(oid, v, err)
			}
			v = n
		}
	case ByteaOID:
		if s, ok := v.(string); ok {
			return append(buf, s...), nil
		}
	case TextOID, VarcharOID, BPCharOID, NameOID, CharOID, JSONOID:
		switch x := v.(type) {
		case string:
			return append(buf, x...), nil
		case []byte:
			return append(buf, x...), nil
		case json.RawMessage:
			return append(buf, x...), nil
		}
		return nil, badValue(oid, v)
	case JSONBOID:
		buf = append(buf, 1)
		switch x := v.(type) {
		case string:
			return append(buf, x...), nil
		case []byte:
			return append(buf, x...), nil
		case json.RawMessage:
			return append(buf, x...), nil
		}
		return nil, badValue(oid, v)
	case UUIDOID:
		switch x := v.(type) {
		case [16]byte:
			return append(buf, x[:]...), nil
		case uuid.UUID:
			return append(buf, x[:]...), nil
		case string:
			u, err := uuid.Parse(x)
			if err != nil {
				return nil, badValue(oid, v)
			}
			return append(buf, u[:]...), nil
		}
		return nil, badValue(oid, v)
	case TimestampOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		// The wall clock of t, as if it were UTC.
		wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		return binary.BigEndian.AppendUint64(buf, uint64(pgMicros(wall))), nil
	case TimestamptzOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		return binary.BigEndian.AppendUint64(buf, uint64(pgMicros(t))), nil
	case DateOID:
		t, ok := v.(time.Time)
		if !ok {
			return nil, badValue(oid, v)
		}
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		days := (d.Unix() - pgEpoch.Unix()) / 86400
		return binary.BigEndian.AppendUint32(buf, uint32(int32(days))), nil
	}
	b, err := c.m.Encode(oid, pgtype.BinaryFormatCode, v, buf)
	if err != nil {
		return nil, badValueErr(oid, v, err)
	}
	if b == nil {
		return nil, badValue(oid, v)
	}
	return b, nil
}

var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pgMicros returns microseconds since 2000-01-01 UTC, rounded.
func pgMicros(t time.Time) int64 {
	const usPerSec = 1_000_000
	sec := t.Unix() - pgEpoch.Unix()
	us := (int64(t.Nanosecond()) + 500) / 1000
	return sec*usPerSec + us
}

func badValue(oid uint32, v any) error {
	return fmt.Errorf("pgwire: cannot encode %T as %s", v, typeName(oid))
}

func badValueErr(oid uint32, v any, err error) error {
	return fmt.Errorf("pgwire: cannot encode %T as %s: %w", v, typeName(oid), err)
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func intValue(oid uint32, v any) (int64, error) {
	n, ok := toInt64(v)
	if !ok {
		return 0, badValue(oid, v)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch oid {
	case Int2OID:
		lo, hi = math.MinInt16, math.MaxInt16
	case Int4OID:
		lo, hi = math.MinInt32, math.MaxInt32
	case OIDOID:
		lo, hi = 0, math.MaxUint32
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("pgwire: %d is out of range for %s", n, typeName(oid))
	}
	return n, nil
}

func floatValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	n, ok := toInt64(v)
	return float64(n), ok
}

// appendFloat formats f as PostgreSQL 12+ does with extra_float_digits > 0:
// the shortest exact representation, in exponent form when the decimal
// exponent is < -4 or >= 15 (float8) or 6 (float4).
func appendFloat(buf []byte, f float64, single bool) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	bits, limit := 64, 15
	if single {
		bits, limit = 32, 6
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(buf, "-0"...)
		}
		return append(buf, '0')
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= limit {
		return append(buf, e...)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, bits)
}

func appendNumericFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, 64)
}

// appendDate writes an ISO date, with " BC" for years before 1.
func appendDate(buf []byte, t time.Time) []byte {
	y, m, d := t.Date()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	buf = appendPadded(buf, y, 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, int(m), 2)
	buf = append(buf, '-')
	buf = appendPadded(buf, d, 2)
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendTimestamp writes t's wall clock in ISO style with microseconds
// (trailing zeros dropped) and, with zone, its UTC offset as +hh[:mm[:ss]].
func appendTimestamp(buf []byte, t time.Time, zone bool) []byte {
	t = t.Round(time.Microsecond)
	y := t.Year()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	buf = appendPadded(buf, y, 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, int(t.Month()), 2)
	buf = append(buf, '-')
	buf = appendPadded(buf, t.Day(), 2)
	buf = append(buf, ' ')
	buf = appendPadded(buf, t.Hour(), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, t.Minute(), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, t.Second(), 2)
	if us := t.Nanosecond() / 1000; us != 0 {
		frac := []byte(fmt.Sprintf("%06d", us))
		for frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
		buf = append(buf, '.')
		buf = append(buf, frac...)
	}
	if zone {
		_, off := t.Zone()
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		buf = append(buf, sign)
		buf = appendPadded(buf, off/3600, 2)
		if mins, secs := off%3600/60, off%60; mins != 0 || secs != 0 {
			buf = append(buf, ':')
			buf = appendPadded(buf, mins, 2)
			if secs != 0 {
				buf = append(buf, ':')
				buf = appendPadded(buf, secs, 2)
			}
		}
	}
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

func appendPadded(buf []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// decodeParam decodes one bound parameter value (src is non-nil).
func (c *codec) decodeParam(oid uint32, format int16, src []byte, loc *time.Location) (any, error) {
	if format == BinaryFormat {
		return c.decodeBinary(oid, src)
	}
	if format != TextFormat {
		return nil, &Error{Code: CodeProtocolViolation, Message: fmt.Sprintf("unsupported format code: %d", format)}
	}
	return c.decodeText(oid, src, loc)
}

func syntaxErr(oid uint32, src []byte) error {
	return &Error{Code: CodeInvalidTextRepresentation,
		Message: fmt.Sprintf("invalid input syntax for type %s: %q", typeName(oid), truncate(string(src), 64))}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// decodeText decodes a text-format value; loc is the zone of timestamptz
// input without an offset.
func (c *codec) decodeText(oid uint32, src []byte, loc *time.Location) (any, error) {
	s := string(src)
	switch oid {
	case BoolOID:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
		return nil, syntaxErr(oid, src)
	case Int2OID, Int4OID, Int8OID, OIDOID:
		bits := map[uint32]int{Int2OID: 16, Int4OID: 32, Int8OID: 64, OIDOID: 64}[oid]
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return nil, &Error{Code: CodeNumericValueOutOfRange,
					Message: fmt.Sprintf("value %q is out of range for type %s", truncate(s, 64), typeName(oid))}
			}
			return nil, syntaxErr(oid, src)
		}
		switch oid {
		case Int2OID:
			return int16(n), nil
		case Int4OID:
			return int32(n), nil
		case OIDOID:
			if n < 0 || n > math.MaxUint32 {
				return nil, &Error{Code: CodeNumericValueOutOfRange, Message: fmt.Sprintf("value %q is out of range for type oid", s)}
			}
			return uint32(n), nil
		}
		return n, nil
	case Float4OID, Float8OID:
		bits := 64
		if oid == Float4OID {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				return nil, syntaxErr(oid, src)
			}
			return nil, &Error{Code: CodeNumericValueOutOfRange,
				Message: fmt.Sprintf("%q is out of range for type %s", truncate(s, 64), typeName(oid))}
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case NumericOID:
		var n pgtype.Numeric
		if err := n.Scan(strings.TrimSpace(s)); err != nil {
			return nil, syntaxErr(oid, src)
		}
		return strings.TrimSpace(s), nil
	case ByteaOID:
		b, err := decodeByteaText(s)
		if err != nil {
			return nil, syntaxErr(oid, src)
		}
		return b, nil
	case DateOID, TimestampOID, TimestamptzOID:
		t, ok := parseDateTime(s, loc)
		if !ok {
			return nil, &Error{Code: CodeInvalidDatetimeFormat,
				Message: fmt.Sprintf("invalid input syntax for type %s: %q", typeName(oid), truncate(s, 64))}
		}
		switch oid {
		case DateOID:
			y, m, d := t.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
		case TimestampOID:
			// PostgreSQL ignores a zone in timestamp input.
			return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
		}
		return t.UTC(), nil
	case UUIDOID:
		u, err := uuid.Parse(strings.TrimSpace(s))
		if err != nil {
			return nil, syntaxErr(oid, src)
		}
		return u.String(), nil
	case JSONOID, JSONBOID:
		if !json.Valid(src) {
			return nil, syntaxErr(oid, src)
		}
		return s, nil
	}
	return s, nil
}

// decodeByteaText decodes bytea input in hex (\x...) or escape format.
func decodeByteaText(s string) ([]byte, error) {
	if h, ok := strings.CutPrefix(s, `\x`); ok {
		return hex.DecodeString(h)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, fmt.Errorf("invalid bytea escape")
		}
	}
	return out, nil
}

func isOctal(b byte) bool { return b >= '0' && b <= '7' }

func (c *codec) decodeBinary(oid uint32, src []byte) (any, error) {
	bad := func() error {
		return &Error{Code: CodeInvalidBinaryRepresentation,
			Message: fmt.Sprintf("incorrect binary data format for type %s", typeName(oid))}
	}
	switch oid {
	case BoolOID:
		if len(src) != 1 {
			return nil, bad()
		}
		return src[0] != 0, nil
	case Int2OID:
		if len(src) != 2 {
			return nil, bad()
		}
		return int16(binary.BigEndian.Uint16(src)), nil
	case Int4OID:
		if len(src) != 4 {
			return nil, bad()
		}
		return int32(binary.BigEndian.Uint32(src)), nil
	case OIDOID:
		if len(src) != 4 {
			return nil, bad()
		}
		return binary.BigEndian.Uint32(src), nil
	case Int8OID:
		if len(src) != 8 {
			return nil, bad()
		}
		return int64(binary.BigEndian.Uint64(src)), nil
	case Float4OID:
		if len(src) != 4 {
			return nil, bad()
		}
		return math.Float32frombits(binary.BigEndian.Uint32(src)), nil
	case Float8OID:
		if len(src) != 8 {
			return nil, bad()
		}
		return math.Float64frombits(binary.BigEndian.Uint64(src)), nil
	case TextOID, VarcharOID, BPCharOID, NameOID, CharOID, UnknownOID:
		return string(src), nil
	case JSONOID:
		if !json.Valid(src) {
			return nil, bad()
		}
		return string(src), nil
	case JSONBOID:
		if len(src) < 1 || src[0] != 1 || !json.Valid(src[1:]) {
			return nil, bad()
		}
		return string(src[1:]), nil
	case ByteaOID:
		return append([]byte{}, src...), nil
	case UUIDOID:
		if len(src) != 16 {
			return nil, bad()
		}
		return uuid.UUID(src).String(), nil
	case DateOID:
		if len(src) != 4 {
			return nil, bad()
		}
		days := int32(binary.BigEndian.Uint32(src))
		if days == math.MaxInt32 || days == math.MinInt32 {
			return nil, &Error{Code: CodeFeatureNotSupported, Message: "infinite dates are not supported"}
		}
		return pgEpoch.AddDate(0, 0, int(days)), nil
	case TimestampOID, TimestamptzOID:
		if len(src) != 8 {
			return nil, bad()
		}
		us := int64(binary.BigEndian.Uint64(src))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return nil, &Error{Code: CodeFeatureNotSupported, Message: "infinite timestamps are not supported"}
		}
		sec, rem := us/1_000_000, us%1_000_000
		return time.Unix(pgEpoch.Unix()+sec, rem*1000).UTC(), nil
	case NumericOID:
		var s string
		if err := c.m.Scan(oid, pgtype.BinaryFormatCode, src, &s); err != nil {
			return nil, bad()
		}
		return s, nil
	case 0:
		return nil, &Error{Code: CodeInvalidBinaryRepresentation, Message: "binary format for a parameter of unspecified type"}
	}
	if !c.binaryOK(oid) {
		return nil, &Error{Code: CodeFeatureNotSupported, Message: fmt.Sprintf("binary format is not supported for type %s", typeName(oid))}
	}
	var v any
	if err := c.m.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
		return nil, bad()
	}
	return v, nil
}

// parseDateTime parses ISO date/time input as PostgreSQL accepts it:
// "YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]][ ][zone][ BC]", where zone is Z,
// UTC, GMT or ±HH[[:]MM[[:]SS]]. Without a zone the wall clock is taken in
// loc.
func parseDateTime(s string, loc *time.Location) (t time.Time, ok bool) {
	s = strings.TrimSpace(s)
	bc := false
	if u := strings.ToUpper(s); strings.HasSuffix(u, " BC") {
		bc, s = true, strings.TrimSpace(s[:len(s)-3])
	} else if strings.HasSuffix(u, " AD") {
		s = strings.TrimSpace(s[:len(s)-3])
	}
	num := func(min, max int) (int, bool) {
		i := 0
		for i < len(s) && i < max && isDigit(s[i]) {
			i++
		}
		if i < min {
			return 0, false
		}
		n, err := strconv.Atoi(s[:i])
		s = s[i:]
		return n, err == nil
	}
	sep := func(c byte) bool {
		if len(s) > 0 && s[0] == c {
			s = s[1:]
			return true
		}
		return false
	}
	y, ok1 := num(1, 7)
	if !ok1 || !sep('-') {
		return t, false
	}
	mo, ok2 := num(1, 2)
	if !ok2 || !sep('-') {
		return t, false
	}
	d, ok3 := num(1, 2)
	if !ok3 || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return t, false
	}
	var h, mi, sec, nsec int
	if len(s) > 1 && (s[0] == ' ' || s[0] == 'T' || s[0] == 't') && isDigit(s[1]) {
		s = s[1:]
		var okH, okM bool
		h, okH = num(1, 2)
		if !okH || !sep(':') {
			return t, false
		}
		mi, okM = num(2, 2)
		if !okM {
			return t, false
		}
		if sep(':') {
			var okS bool
			if sec, okS = num(2, 2); !okS {
				return t, false
			}
			if sep('.') {
				i := 0
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				if i == 0 {
					return t, false
				}
				frac := s[:i] + "000000000"
				nsec, _ = strconv.Atoi(frac[:9])
				s = s[i:]
			}
		}
		if h > 24 || mi > 59 || sec > 60 || (h == 24 && (mi != 0 || sec != 0 || nsec != 0)) {
			return t, false
		}
	}
	s = strings.TrimLeft(s, " ")
	if bc {
		y = 1 - y
	}
	switch u := strings.ToUpper(s); {
	case u == "":
		return time.Date(y, time.Month(mo), d, h, mi, sec, nsec, loc), validDay(y, mo, d)
	case u == "Z" || u == "UTC" || u == "GMT" || u == "ZULU":
		return time.Date(y, time.Month(mo), d, h, mi, sec, nsec, time.UTC), validDay(y, mo, d)
	case s[0] == '+' || s[0] == '-':
		sign := 1
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
		oh, okh := num(1, 2)
		if !okh {
			return t, false
		}
		var om, os int
		if len(s) > 0 {
			sep(':')
			var okm bool
			if om, okm = num(2, 2); !okm {
				return t, false
			}
			if len(s) > 0 {
				sep(':')
				var oks bool
				if os, oks = num(2, 2); !oks || s != "" {
					return t, false
				}
			}
		}
		if oh > 15 || om > 59 || os > 59 {
			return t, false
		}
		off := sign * (oh*3600 + om*60 + os)
		return time.Date(y, time.Month(mo), d, h, mi, sec, nsec, time.FixedZone("", off)), validDay(y, mo, d)
	}
	return t, false
}

// validDay reports whether d is a day of month mo in year y.
func validDay(y, mo, d int) bool {
	return time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Day() == d
}

// TextEncoder formats Engine result values in PostgreSQL's text format,
// exactly as a connection sends them, for other front ends of an Engine
// (the HTTP query API's CSV and NDJSON output). It is not safe for
// concurrent use.
type TextEncoder struct {
	c   *codec
	loc *time.Location
}

// NewTextEncoder returns a TextEncoder showing timestamptz values in loc
// (UTC if nil).
func NewTextEncoder(loc *time.Location) *TextEncoder {
	if loc == nil {
		loc = time.UTC
	}
	return &TextEncoder{c: newCodec(), loc: loc}
}

// Append appends the text form of the non-nil value v of type oid to buf.
func (e *TextEncoder) Append(buf []byte, oid uint32, v any) ([]byte, error) {
	return e.c.appendText(buf, oid, v, e.loc)
}

// IntValue converts a result value of an integer column (any Go integer
// type, see Encoding) to int64; ok is false for other values.
func IntValue(v any) (n int64, ok bool) { return toInt64(v) }

// FloatValue converts a result value of a floating-point column (float32,
// float64 or an integer, see Encoding) to float64.
func FloatValue(v any) (f float64, ok bool) { return floatValue(v) }
