package engine

import (
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// duckType is the DuckDB type of an Iceberg type.
func duckType(t iceberg.Type) (string, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN", nil
	case iceberg.Int32Type:
		return "INTEGER", nil
	case iceberg.Int64Type:
		return "BIGINT", nil
	case iceberg.Float32Type:
		return "FLOAT", nil
	case iceberg.Float64Type:
		return "DOUBLE", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale()), nil
	case iceberg.DateType:
		return "DATE", nil
	case iceberg.TimeType:
		return "TIME", nil
	case iceberg.TimestampType:
		return "TIMESTAMP", nil
	case iceberg.TimestampTzType:
		return "TIMESTAMPTZ", nil
	case iceberg.TimestampNsType:
		return "TIMESTAMP_NS", nil
	case iceberg.TimestampTzNsType:
		return "TIMESTAMPTZ", nil
	case iceberg.StringType:
		return "VARCHAR", nil
	case iceberg.UUIDType:
		return "UUID", nil
	case iceberg.BinaryType, iceberg.FixedType:
		return "BLOB", nil
	case *iceberg.ListType:
		e, err := duckType(t.Element)
		if err != nil {
			return "", err
		}
		return e + "[]", nil
	case *iceberg.MapType:
		k, err := duckType(t.KeyType)
		if err != nil {
			return "", err
		}
		v, err := duckType(t.ValueType)
		if err != nil {
			return "", err
		}
		return "MAP(" + k + ", " + v + ")", nil
	case *iceberg.StructType:
		s := "STRUCT("
		for i, f := range t.FieldList {
			ft, err := duckType(f.Type)
			if err != nil {
				return "", err
			}
			if i > 0 {
				s += ", "
			}
			s += quoteIdent(f.Name) + " " + ft
		}
		return s + ")", nil
	}
	return "", unsupported("columns of type %s are not supported by the SQL endpoint yet", t)
}

// pgType maps a DuckDB result column type to a PostgreSQL type OID and a
// converter of DuckDB's Go values to what pgwire encodes for that OID.
func pgType(t duckdb.Type) (uint32, func(any) any) {
	same := func(v any) any { return v }
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return pgwire.BoolOID, same
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_UTINYINT:
		return pgwire.Int2OID, same
	case duckdb.TYPE_INTEGER, duckdb.TYPE_USMALLINT:
		return pgwire.Int4OID, same
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UINTEGER:
		return pgwire.Int8OID, same
	case duckdb.TYPE_UBIGINT, duckdb.TYPE_HUGEINT, duckdb.TYPE_UHUGEINT, duckdb.TYPE_DECIMAL, duckdb.TYPE_BIGNUM:
		return pgwire.NumericOID, numericString
	case duckdb.TYPE_FLOAT:
		return pgwire.Float4OID, same
	case duckdb.TYPE_DOUBLE:
		return pgwire.Float8OID, same
	case duckdb.TYPE_VARCHAR, duckdb.TYPE_ENUM:
		return pgwire.TextOID, textString
	case duckdb.TYPE_BLOB:
		return pgwire.ByteaOID, same
	case duckdb.TYPE_DATE:
		return pgwire.DateOID, same
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS:
		return pgwire.TimestampOID, same
	case duckdb.TYPE_TIMESTAMP_TZ:
		return pgwire.TimestamptzOID, same
	case duckdb.TYPE_UUID:
		return pgwire.UUIDOID, uuidValue
	case duckdb.TYPE_TIME, duckdb.TYPE_TIME_TZ:
		return pgwire.TextOID, timeString
	}
	return pgwire.TextOID, textString
}

// paramOID is the PostgreSQL type reported for a DuckDB parameter type; 0
// (unspecified) lets the value arrive as text, which DuckDB casts.
func paramOID(t duckdb.Type) uint32 {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return pgwire.BoolOID
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_UTINYINT:
		return pgwire.Int2OID
	case duckdb.TYPE_INTEGER, duckdb.TYPE_USMALLINT:
		return pgwire.Int4OID
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UINTEGER:
		return pgwire.Int8OID
	case duckdb.TYPE_FLOAT:
		return pgwire.Float4OID
	case duckdb.TYPE_DOUBLE:
		return pgwire.Float8OID
	case duckdb.TYPE_DECIMAL, duckdb.TYPE_HUGEINT, duckdb.TYPE_UBIGINT:
		return pgwire.NumericOID
	case duckdb.TYPE_VARCHAR:
		return pgwire.TextOID
	case duckdb.TYPE_BLOB:
		return pgwire.ByteaOID
	case duckdb.TYPE_DATE:
		return pgwire.DateOID
	case duckdb.TYPE_TIMESTAMP:
		return pgwire.TimestampOID
	case duckdb.TYPE_TIMESTAMP_TZ:
		return pgwire.TimestamptzOID
	case duckdb.TYPE_UUID:
		return pgwire.UUIDOID
	}
	return 0
}

func numericString(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case duckdb.Decimal:
		return x.String()
	case *big.Int:
		return x.String()
	case uint64:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

func textString(v any) any {
	switch x := v.(type) {
	case nil, string, []byte:
		return v
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case duckdb.Interval:
		return fmt.Sprintf("%d mons %d days %d us", x.Months, x.Days, x.Micros)
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}

func timeString(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.Format("15:04:05.999999")
	}
	return textString(v)
}

func uuidValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case duckdb.UUID:
		return [16]byte(x)
	case *duckdb.UUID:
		return [16]byte(*x)
	case []byte:
		if len(x) == 16 {
			return [16]byte(x)
		}
	}
	return textString(v)
}
