package engine

import (
	"fmt"
	"strings"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// DuckDB's pg_catalog.pg_attribute gives DuckDB's own type ids as atttypid
// (BIGINT is 14, DOUBLE 23, VARCHAR 25), while its pg_type gives PostgreSQL
// OIDs (int8 is 20, int4 23, varchar 1043). A client joining the two, as
// pgjdbc's DatabaseMetaData.getColumns does (JOIN pg_type t ON a.atttypid
// = t.oid), gets no row for most columns and a wrong type for the rest
// (DOUBLE joins int4). The patches below make pg_attribute speak
// PostgreSQL OIDs and typmods, add the text type to pg_type, and redefine
// format_type on PostgreSQL OIDs.

// catalogTypes maps DuckDB logical type names (duckdb_types().logical_type)
// to the PostgreSQL type a stand-in column of that type is described as.
// The OIDs agree with pgType, which types result columns, except that a
// VARCHAR column is described as varchar (as DuckDB's own pg_type names it)
// and TIME as time. Types not listed are described as text: nested values
// (lists, structs, maps) arrive as text on the wire.
var catalogTypes = []struct {
	logical string
	oid     uint32
}{
	{"BOOLEAN", pgwire.BoolOID},
	{"TINYINT", pgwire.Int2OID},
	{"UTINYINT", pgwire.Int2OID},
	{"SMALLINT", pgwire.Int2OID},
	{"USMALLINT", pgwire.Int4OID},
	{"INTEGER", pgwire.Int4OID},
	{"UINTEGER", pgwire.Int8OID},
	{"BIGINT", pgwire.Int8OID},
	{"UBIGINT", pgwire.NumericOID},
	{"HUGEINT", pgwire.NumericOID},
	{"UHUGEINT", pgwire.NumericOID},
	{"BIGNUM", pgwire.NumericOID},
	{"DECIMAL", pgwire.NumericOID},
	{"FLOAT", pgwire.Float4OID},
	{"DOUBLE", pgwire.Float8OID},
	{"VARCHAR", pgwire.VarcharOID},
	{"BLOB", pgwire.ByteaOID},
	{"DATE", pgwire.DateOID},
	{"TIME", timeOID},
	{"TIME WITH TIME ZONE", timetzOID},
	{"TIMESTAMP", pgwire.TimestampOID},
	{"TIMESTAMP_S", pgwire.TimestampOID},
	{"TIMESTAMP_MS", pgwire.TimestampOID},
	{"TIMESTAMP_NS", pgwire.TimestampOID},
	{"TIMESTAMP WITH TIME ZONE", pgwire.TimestamptzOID},
	{"TIMESTAMPTZ_NS", pgwire.TimestamptzOID},
	{"INTERVAL", intervalOID},
	{"UUID", pgwire.UUIDOID},
}

// PostgreSQL type OIDs pgwire does not encode natively but DuckDB's
// pg_type lists.
const (
	timeOID     uint32 = 1083
	timetzOID   uint32 = 1266
	intervalOID uint32 = 1186
)

// pgAttributeView is pg_catalog.pg_attribute with atttypid a PostgreSQL type
// OID and atttypmod PostgreSQL's typmod (numeric: ((precision << 16) |
// scale) + 4; DuckDB writes precision*1000 + scale).
var pgAttributeView = func() string {
	var b strings.Builder
	b.WriteString("CASE m.logical_type")
	for _, t := range catalogTypes {
		fmt.Fprintf(&b, " WHEN '%s' THEN %d", t.logical, t.oid)
	}
	fmt.Fprintf(&b, " ELSE %d END", pgwire.TextOID)
	return "SELECT a.* REPLACE (CAST(" + b.String() + " AS BIGINT) AS atttypid, " +
		"CASE WHEN m.logical_type = 'DECIMAL' AND a.atttypmod > 0 THEN (((a.atttypmod // 1000) << 16) | (a.atttypmod % 1000)) + 4 ELSE -1 END AS atttypmod) " +
		"FROM pg_catalog.pg_attribute a LEFT JOIN " +
		"(SELECT type_oid, any_value(logical_type) AS logical_type FROM duckdb_types() WHERE type_oid IS NOT NULL GROUP BY type_oid) m " +
		"ON m.type_oid = a.atttypid WHERE a.attrelid NOT IN " + temporaryOIDs
}()

// pgTypeView is pg_catalog.pg_type with the text type, which DuckDB's lacks
// and pgAttributeView uses for types without a closer PostgreSQL type.
var pgTypeView = fmt.Sprintf("SELECT * FROM pg_catalog.pg_type UNION ALL BY NAME "+
	"SELECT %d AS oid, 'text' AS typname, (SELECT any_value(typnamespace) FROM pg_catalog.pg_type WHERE oid = %d) AS typnamespace, "+
	"0 AS typowner, -1 AS typlen, false AS typbyval, 'b' AS typtype, 'S' AS typcategory, true AS typispreferred, true AS typisdefined, "+
	"'i' AS typalign, 'x' AS typstorage, false AS typnotnull, 0 AS typbasetype, -1 AS typtypmod, 0 AS typndims",
	pgwire.TextOID, pgwire.VarcharOID)

// formatType is PostgreSQL's format_type(type_oid, typemod) over the OIDs
// pgAttributeView gives: PostgreSQL's SQL names (bigint, character
// varying, double precision, timestamp without time zone; numeric with its
// precision and scale), which SQLAlchemy and psql show and map to types;
// other types by their name in pg_type. DuckDB's own format_type takes
// DuckDB type ids.
var formatType = func() string {
	var b strings.Builder
	b.WriteString("(type_oid_arg, typemod_arg) AS CASE WHEN type_oid_arg IS NULL THEN NULL ")
	fmt.Fprintf(&b, "WHEN type_oid_arg = %d AND typemod_arg > 4 THEN 'numeric(' || ((typemod_arg - 4) >> 16) || ',' || ((typemod_arg - 4) & 65535) || ')' ", pgwire.NumericOID)
	for _, t := range sqlTypeNames {
		fmt.Fprintf(&b, "WHEN type_oid_arg = %d THEN '%s' ", t.oid, t.name)
	}
	b.WriteString("ELSE coalesce((SELECT any_value(typname) FROM pg_catalog.pg_type WHERE oid = type_oid_arg), '???') END")
	return b.String()
}()

// sqlTypeNames are the names PostgreSQL's format_type gives the types
// pgAttributeView uses.
var sqlTypeNames = []struct {
	oid  uint32
	name string
}{
	{pgwire.BoolOID, "boolean"},
	{pgwire.ByteaOID, "bytea"},
	{pgwire.Int2OID, "smallint"},
	{pgwire.Int4OID, "integer"},
	{pgwire.Int8OID, "bigint"},
	{pgwire.TextOID, "text"},
	{pgwire.Float4OID, "real"},
	{pgwire.Float8OID, "double precision"},
	{pgwire.VarcharOID, "character varying"},
	{pgwire.DateOID, "date"},
	{timeOID, "time without time zone"},
	{timetzOID, "time with time zone"},
	{pgwire.TimestampOID, "timestamp without time zone"},
	{pgwire.TimestamptzOID, "timestamp with time zone"},
	{intervalOID, "interval"},
	{pgwire.NumericOID, "numeric"},
	{pgwire.UUIDOID, "uuid"},
}
