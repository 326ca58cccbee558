package pgwire

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestTextEncoding checks text output against what PostgreSQL 16 prints.
func TestTextEncoding(t *testing.T) {
	c := newCodec()
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 3, 5, 6, 7, 8, 120000000, time.UTC)
	cases := []struct {
		oid  uint32
		v    any
		loc  *time.Location
		want string
	}{
		{BoolOID, true, nil, "t"},
		{BoolOID, false, nil, "f"},
		{Int2OID, int8(-5), nil, "-5"},
		{Int4OID, uint16(65535), nil, "65535"},
		{Int8OID, int64(math.MinInt64), nil, "-9223372036854775808"},
		{OIDOID, uint32(4294967295), nil, "4294967295"},
		{Float8OID, 1234567.0, nil, "1234567"},
		{Float8OID, 1e14, nil, "100000000000000"},
		{Float8OID, 1e15, nil, "1e+15"},
		{Float8OID, 0.0001, nil, "0.0001"},
		{Float8OID, 0.00001, nil, "1e-05"},
		{Float8OID, 0.1, nil, "0.1"},
		{Float8OID, 1.0 / 3, nil, "0.3333333333333333"},
		{Float8OID, -2.5e-300, nil, "-2.5e-300"},
		{Float8OID, math.Inf(1), nil, "Infinity"},
		{Float8OID, math.Inf(-1), nil, "-Infinity"},
		{Float8OID, math.NaN(), nil, "NaN"},
		{Float8OID, math.Copysign(0, -1), nil, "-0"},
		{Float8OID, 42, nil, "42"},
		{Float4OID, float32(1234567), nil, "1.234567e+06"},
		{Float4OID, float32(123456), nil, "123456"},
		{Float4OID, float32(0.1), nil, "0.1"},
		{NumericOID, "-12.340", nil, "-12.340"},
		{NumericOID, int64(7), nil, "7"},
		{NumericOID, 2.5, nil, "2.5"},
		{TextOID, "ünï", nil, "ünï"},
		{VarcharOID, []byte("v"), nil, "v"},
		{ByteaOID, []byte{0, 0xab}, nil, `\x00ab`},
		{ByteaOID, "A", nil, `\x41`},
		{DateOID, time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC), nil, "2024-02-29"},
		{DateOID, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), nil, "0001-01-01 BC"},
		{DateOID, time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), nil, "12345-01-01"},
		{TimestampOID, ts, nil, "2024-03-05 06:07:08.12"},
		{TimestampOID, ts.In(kolkata), nil, "2024-03-05 11:37:08.12"}, // the wall clock
		{TimestampOID, time.Date(2024, 1, 1, 0, 0, 0, 999999500, time.UTC), nil, "2024-01-01 00:00:01"},
		{TimestamptzOID, ts, time.UTC, "2024-03-05 06:07:08.12+00"},
		{TimestamptzOID, ts, kolkata, "2024-03-05 11:37:08.12+05:30"},
		{TimestamptzOID, ts, time.FixedZone("", -(3*3600 + 25*60 + 7)), "2024-03-05 02:42:01.12-03:25:07"},
		{JSONOID, `{"a":1}`, nil, `{"a":1}`},
		{JSONBOID, []byte(`[]`), nil, `[]`},
		{UUIDOID, [16]byte{0xa0, 0xee}, nil, "a0ee0000-0000-0000-0000-000000000000"},
		{UUIDOID, uuid.MustParse("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), nil, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{UUIDOID, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", nil, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{1007, []int32{1, 2}, nil, "{1,2}"}, // int4[] through pgtype
		{99999, "anything", nil, "anything"},
	}
	for _, tc := range cases {
		loc := tc.loc
		if loc == nil {
			loc = time.UTC
		}
		got, err := c.appendText(nil, tc.oid, tc.v, loc)
		if err != nil {
			t.Errorf("%s %v: %v", typeName(tc.oid), tc.v, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s %v = %q, want %q", typeName(tc.oid), tc.v, got, tc.want)
		}
	}
}

// TestEncodingErrors checks that values of the wrong Go type or out of
// range are refused in both formats.
func TestEncodingErrors(t *testing.T) {
	c := newCodec()
	for _, tc := range []struct {
		oid uint32
		v   any
	}{
		{BoolOID, 1}, {Int2OID, 40000}, {Int4OID, int64(math.MaxInt32) + 1}, {Int8OID, uint64(math.MaxUint64)},
		{Int8OID, "5"}, {OIDOID, -1}, {Float8OID, "1.5"}, {NumericOID, true}, {DateOID, "2024-01-01"},
		{TimestampOID, 5}, {TimestamptzOID, "now"}, {UUIDOID, "not-a-uuid"}, {UUIDOID, 5}, {ByteaOID, 5},
		{TextOID, 5}, {JSONBOID, 5}, {99999, struct{}{}},
	} {
		for _, f := range []int16{TextFormat, BinaryFormat} {
			if b, err := c.appendValue(nil, tc.oid, f, tc.v, time.UTC); err == nil {
				t.Errorf("%s format %d accepted %T %v as %q", typeName(tc.oid), f, tc.v, tc.v, b)
			}
		}
	}
}

// TestBinaryRoundTrip encodes values in binary and decodes them as
// parameters of the same type.
func TestBinaryRoundTrip(t *testing.T) {
	c := newCodec()
	ts := time.Date(1969, 7, 20, 20, 17, 40, 123456000, time.UTC)
	cases := []struct {
		oid  uint32
		in   any
		want any
	}{
		{BoolOID, true, true},
		{Int2OID, -7, int16(-7)},
		{Int4OID, int64(1 << 30), int32(1 << 30)},
		{Int8OID, int64(math.MaxInt64), int64(math.MaxInt64)},
		{OIDOID, uint32(99), uint32(99)},
		{Float4OID, float32(-0.75), float32(-0.75)},
		{Float8OID, math.Pi, math.Pi},
		{NumericOID, "-1234.5600", "-1234.5600"},
		{NumericOID, "NaN", "NaN"},
		{TextOID, "ü", "ü"},
		{JSONOID, `{"k":[1]}`, `{"k":[1]}`},
		{JSONBOID, `{"k":[1]}`, `{"k":[1]}`},
		{ByteaOID, []byte{1, 2}, []byte{1, 2}},
		{UUIDOID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{DateOID, time.Date(1492, 10, 12, 0, 0, 0, 0, time.UTC), time.Date(1492, 10, 12, 0, 0, 0, 0, time.UTC)},
		{DateOID, time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC)},
		{TimestampOID, ts, ts},
		{TimestamptzOID, ts.In(time.FixedZone("", 3600)), ts},
	}
	for _, tc := range cases {
		b, err := c.appendBinary(nil, tc.oid, tc.in)
		if err != nil {
			t.Errorf("encode %s %v: %v", typeName(tc.oid), tc.in, err)
			continue
		}
		got, err := c.decodeParam(tc.oid, BinaryFormat, b, time.UTC)
		if err != nil {
			t.Errorf("decode %s %x: %v", typeName(tc.oid), b, err)
			continue
		}
		if gt, ok := got.(time.Time); ok {
			if !gt.Equal(tc.want.(time.Time)) {
				t.Errorf("%s: got %v, want %v", typeName(tc.oid), gt, tc.want)
			}
			continue
		}
		if gb, ok := got.([]byte); ok {
			if !bytes.Equal(gb, tc.want.([]byte)) {
				t.Errorf("%s: got %v, want %v", typeName(tc.oid), gb, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %#v, want %#v", typeName(tc.oid), got, tc.want)
		}
	}
}

// TestTextParams decodes text-format parameters as PostgreSQL reads them.
func TestTextParams(t *testing.T) {
	c := newCodec()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		oid  uint32
		in   string
		want any
		code string // expected SQLSTATE, "" for success
	}{
		{BoolOID, " Yes ", true, ""},
		{BoolOID, "off", false, ""},
		{BoolOID, "maybe", nil, CodeInvalidTextRepresentation},
		{Int2OID, "32768", nil, CodeNumericValueOutOfRange},
		{Int4OID, " 42 ", int32(42), ""},
		{Int8OID, "1.5", nil, CodeInvalidTextRepresentation},
		{OIDOID, "-1", nil, CodeNumericValueOutOfRange},
		{Float8OID, "-Infinity", math.Inf(-1), ""},
		{Float8OID, "1e400", nil, CodeNumericValueOutOfRange},
		{Float4OID, "x", nil, CodeInvalidTextRepresentation},
		{NumericOID, " 1.50 ", "1.50", ""},
		{NumericOID, "abc", nil, CodeInvalidTextRepresentation},
		{ByteaOID, `\x00ff`, []byte{0, 0xff}, ""},
		{ByteaOID, `a\\b\001`, []byte{'a', '\\', 'b', 1}, ""},
		{ByteaOID, `\x0`, nil, CodeInvalidTextRepresentation},
		{ByteaOID, `bad\q`, nil, CodeInvalidTextRepresentation},
		{UUIDOID, "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", ""},
		{JSONOID, `{"a":`, nil, CodeInvalidTextRepresentation},
		{JSONBOID, `[1]`, `[1]`, ""},
		{TextOID, "x", "x", ""},
		{0, "untyped", "untyped", ""},
		{DateOID, "2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), ""},
		{DateOID, "2024-02-30", nil, CodeInvalidDatetimeFormat},
		{DateOID, "0044-03-15 BC", time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), ""},
		{DateOID, "1999-12-31 23:59:59-08", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), ""},
		{TimestampOID, "2024-01-02 03:04:05.123456789Z", time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC), ""},
		{TimestampOID, "2024-01-02T03:04", time.Date(2024, 1, 2, 3, 4, 0, 0, time.UTC), ""},
		{TimestampOID, "2024-01-02 25:00:00", nil, CodeInvalidDatetimeFormat},
		{TimestamptzOID, "2024-01-02 03:04:05+05:30", time.Date(2024, 1, 1, 21, 34, 5, 0, time.UTC), ""},
		{TimestamptzOID, "2024-01-02 03:04:05 -0130", time.Date(2024, 1, 2, 4, 34, 5, 0, time.UTC), ""},
		{TimestamptzOID, "2024-07-01 12:00:00", time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC), ""}, // session zone Paris (CEST)
		{TimestamptzOID, "2024-07-01 12:00:00 UTC", time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC), ""},
		{TimestamptzOID, "2024-07-01 12:00:00+99", nil, CodeInvalidDatetimeFormat},
		{TimestamptzOID, "infinity", nil, CodeInvalidDatetimeFormat},
	}
	for _, tc := range cases {
		got, err := c.decodeParam(tc.oid, TextFormat, []byte(tc.in), paris)
		if tc.code != "" {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Errorf("%s %q: got %#v, %v; want error %s", typeName(tc.oid), tc.in, got, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", typeName(tc.oid), tc.in, err)
			continue
		}
		switch w := tc.want.(type) {
		case time.Time:
			if !got.(time.Time).Equal(w) {
				t.Errorf("%s %q = %v, want %v", typeName(tc.oid), tc.in, got, w)
			}
		case []byte:
			if !bytes.Equal(got.([]byte), w) {
				t.Errorf("%s %q = %v, want %v", typeName(tc.oid), tc.in, got, w)
			}
		default:
			if got != tc.want {
				t.Errorf("%s %q = %#v, want %#v", typeName(tc.oid), tc.in, got, tc.want)
			}
		}
	}
}

// FuzzDecodeParam feeds arbitrary bytes to the parameter decoders: they
// must return a value or an *Error, never panic.
func FuzzDecodeParam(f *testing.F) {
	f.Add(uint32(TimestamptzOID), int16(0), []byte("2024-01-02 03:04:05+01"))
	f.Add(uint32(NumericOID), int16(1), []byte{0, 1, 0, 0, 0, 0, 0, 2, 0, 5})
	f.Add(uint32(1007), int16(1), []byte{0, 0, 0, 1})
	f.Add(uint32(ByteaOID), int16(0), []byte(`\x0102`))
	c := newCodec()
	oids := []uint32{0, BoolOID, ByteaOID, Int8OID, Int2OID, Int4OID, TextOID, OIDOID, JSONOID, Float4OID, Float8OID,
		DateOID, TimestampOID, TimestamptzOID, NumericOID, UUIDOID, JSONBOID, 1007, 1186, 99999}
	f.Fuzz(func(t *testing.T, oid uint32, format int16, src []byte) {
		oid = oids[oid%uint32(len(oids))]
		_, err := c.decodeParam(oid, format&1, src, time.UTC)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("decode %d/%d %q: non-SQLSTATE error %v", oid, format, src, err)
			}
		}
	})
}
