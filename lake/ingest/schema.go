package ingest

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
)

// MaxSchemaFields bounds the columns of a schema given as text.
const MaxSchemaFields = 4096

// ParseSchema reads a table schema given by a user: either the JSON form of
// an Iceberg schema ({"type":"struct","fields":[...]}) or a list of columns
// "name type [not null]" separated by commas, e.g.
//
//	id long not null, name string, ts timestamptz, price decimal(10,2)
//
// Types are Iceberg's primitive types (boolean, int, long, float, double,
// decimal(P,S), date, time, timestamp, timestamptz, timestamp_ns,
// timestamptz_ns, string, uuid, binary, fixed[N]) and the SQL aliases bool,
// integer, int32, bigint, int64, float32, real, float64, varchar, text,
// bytes. Field ids are assigned 1, 2, ... in order.
func ParseSchema(s string) (*iceberg.Schema, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, floe.E(floe.Invalid, "schema", "empty schema")
	}
	if strings.HasPrefix(s, "{") {
		var sc iceberg.Schema
		if err := json.Unmarshal([]byte(s), &sc); err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "schema: not a JSON Iceberg schema: %s", err)
		}
		if len(sc.Fields()) == 0 {
			return nil, floe.E(floe.Invalid, "schema", "schema: the JSON schema has no fields")
		}
		return &sc, nil
	}
	parts, err := splitTop(s)
	if err != nil {
		return nil, floe.E(floe.Invalid, "schema", "schema %q: %s", s, err)
	}
	if len(parts) > MaxSchemaFields {
		return nil, floe.E(floe.Invalid, "schema", "schema: %d columns, at most %d", len(parts), MaxSchemaFields)
	}
	fields := make([]iceberg.NestedField, 0, len(parts))
	seen := map[string]bool{}
	for i, p := range parts {
		f, err := parseColumn(p)
		if err != nil {
			return nil, floe.E(floe.Invalid, "schema", "schema column %d (%q): %s", i+1, strings.TrimSpace(p), err)
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, floe.E(floe.Invalid, "schema", "schema: column %q appears twice", f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		f.ID = i + 1
		fields = append(fields, f)
	}
	return iceberg.NewSchema(0, fields...), nil
}

// parseColumn reads "name type [not null | null]".
func parseColumn(s string) (iceberg.NestedField, error) {
	s = strings.TrimSpace(s)
	name, rest, err := cutName(s)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	rest = strings.TrimSpace(rest)
	required := false
	lower := strings.ToLower(rest)
	switch {
	case strings.HasSuffix(lower, " not null"):
		required = true
		rest = strings.TrimSpace(rest[:len(rest)-len(" not null")])
	case strings.HasSuffix(lower, " null"):
		rest = strings.TrimSpace(rest[:len(rest)-len(" null")])
	}
	if rest == "" {
		return iceberg.NestedField{}, errf("no type for column %q", name)
	}
	t, err := ParseType(rest)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	return iceberg.NestedField{Name: name, Type: t, Required: required}, nil
}

// cutName splits off a column name: a bare word, or "double quoted" (with
// "" for a quote inside).
func cutName(s string) (name, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				if b.Len() == 0 {
					return "", "", errf("empty column name")
				}
				return b.String(), s[i+1:], nil
			}
			b.WriteByte(s[i])
		}
		return "", "", errf("unterminated quoted name")
	}
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i <= 0 {
		return "", "", errf("want \"name type\"")
	}
	return s[:i], s[i:], nil
}

// ParseType reads one Iceberg primitive type name (see ParseSchema).
func ParseType(s string) (iceberg.Type, error) {
	t := strings.ToLower(strings.Join(strings.Fields(s), ""))
	switch t {
	case "boolean", "bool":
		return iceberg.PrimitiveTypes.Bool, nil
	case "int", "integer", "int32":
		return iceberg.PrimitiveTypes.Int32, nil
	case "long", "bigint", "int64":
		return iceberg.PrimitiveTypes.Int64, nil
	case "float", "float32", "real":
		return iceberg.PrimitiveTypes.Float32, nil
	case "double", "float64":
		return iceberg.PrimitiveTypes.Float64, nil
	case "date":
		return iceberg.PrimitiveTypes.Date, nil
	case "time":
		return iceberg.PrimitiveTypes.Time, nil
	case "timestamp":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case "timestamptz":
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case "timestamp_ns":
		return iceberg.PrimitiveTypes.TimestampNs, nil
	case "timestamptz_ns":
		return iceberg.PrimitiveTypes.TimestampTzNs, nil
	case "string", "varchar", "text":
		return iceberg.PrimitiveTypes.String, nil
	case "uuid":
		return iceberg.PrimitiveTypes.UUID, nil
	case "binary", "bytes":
		return iceberg.PrimitiveTypes.Binary, nil
	}
	if args, ok := call(t, "decimal"); ok {
		ps := strings.Split(args, ",")
		if len(ps) != 2 {
			return nil, errf("decimal needs (precision, scale): %q", s)
		}
		p, err1 := strconv.Atoi(ps[0])
		sc, err2 := strconv.Atoi(ps[1])
		if err1 != nil || err2 != nil || p < 1 || p > 38 || sc < 0 || sc > p {
			return nil, errf("decimal(%s): want 1 <= precision <= 38 and 0 <= scale <= precision", args)
		}
		return iceberg.DecimalTypeOf(p, sc), nil
	}
	if inner, ok := strings.CutPrefix(t, "fixed["); ok && strings.HasSuffix(inner, "]") {
		n, err := strconv.Atoi(strings.TrimSuffix(inner, "]"))
		if err != nil || n < 1 || n > 1<<20 {
			return nil, errf("fixed[N]: want 1 <= N <= %d, got %q", 1<<20, s)
		}
		return iceberg.FixedTypeOf(n), nil
	}
	return nil, errf("unknown type %q (want boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz, string, uuid, binary or fixed[N])", s)
}

// call matches "name(args)" and returns args.
func call(s, name string) (string, bool) {
	inner, ok := strings.CutPrefix(s, name+"(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return "", false
	}
	return strings.TrimSuffix(inner, ")"), true
}

// splitTop splits s at commas outside parentheses, brackets and quotes.
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
			if depth < 0 {
				return nil, errf("unbalanced %q at offset %d", c, i)
			}
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, errf("unterminated quote")
	}
	if depth != 0 {
		return nil, errf("unbalanced parentheses")
	}
	out = append(out, s[start:])
	for _, p := range out {
		if strings.TrimSpace(p) == "" {
			return nil, errf("empty item in list")
		}
	}
	return out, nil
}

// parseError is a message for a floe.Invalid error built by the caller.
type parseError string

func (e parseError) Error() string { return string(e) }

func errf(format string, args ...any) error {
	if len(args) == 0 {
		return parseError(format)
	}
	return parseError(sprintf(format, args...))
}
