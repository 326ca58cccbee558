package engine

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestLiteralFor(t *testing.T) {
	dec := iceberg.DecimalTypeOf(10, 2)
	tests := []struct {
		typ  iceberg.Type
		c    constant
		want string // "" : refused
	}{
		{iceberg.PrimitiveTypes.Int64, constant{kind: "INTEGER", text: "-42"}, "-42"},
		{iceberg.PrimitiveTypes.Int32, constant{kind: "INTEGER", text: "7"}, "7"},
		{iceberg.PrimitiveTypes.Int32, constant{kind: "INTEGER", text: "4294967296"}, ""},
		{iceberg.PrimitiveTypes.Int64, constant{kind: "NUMERIC", text: "2.5"}, ""},
		{iceberg.PrimitiveTypes.Int64, constant{kind: "STRING", text: "5"}, ""},
		{iceberg.PrimitiveTypes.Float64, constant{kind: "NUMERIC", text: "2.5"}, "2.5"},
		{iceberg.PrimitiveTypes.Float32, constant{kind: "NUMERIC", text: "2.5"}, ""},
		{dec, constant{kind: "NUMERIC", text: "0.05"}, "0.05"},
		{dec, constant{kind: "INTEGER", text: "24"}, "24.00"},
		{dec, constant{kind: "NUMERIC", text: "0.055"}, ""},
		{iceberg.PrimitiveTypes.String, constant{kind: "STRING", text: "eu"}, "eu"},
		{iceberg.PrimitiveTypes.String, constant{kind: "STRING", text: "1998-09-02", cast: "DATE"}, ""},
		{iceberg.PrimitiveTypes.Date, constant{kind: "STRING", text: "1998-09-02", cast: "DATE"}, "1998-09-02"},
		{iceberg.PrimitiveTypes.Date, constant{kind: "STRING", text: "1969-12-31"}, "1969-12-31"},
		{iceberg.PrimitiveTypes.Date, constant{kind: "STRING", text: "yesterday"}, ""},
		{iceberg.PrimitiveTypes.Bool, constant{kind: "BOOLEAN", text: "true"}, ""},
		{iceberg.PrimitiveTypes.TimestampTz, constant{kind: "STRING", text: "2024-01-01 00:00:00"}, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s", tt.typ, tt.c.kind, tt.c.text), func(t *testing.T) {
			l, ok := literalFor(tt.typ, tt.c)
			got := ""
			if ok {
				got = l.String()
			}
			if got != tt.want {
				t.Errorf("got %q (ok %v), want %q", got, ok, tt.want)
			}
		})
	}
}
