package deltasharing

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"
)

// sparkField is one field of a Spark StructType JSON schema.
type sparkField struct {
	Name     string         `json:"name"`
	Type     any            `json:"type"`
	Nullable bool           `json:"nullable"`
	Metadata map[string]any `json:"metadata"`
}

type sparkStruct struct {
	Type   string       `json:"type"` // "struct"
	Fields []sparkField `json:"fields"`
}

type sparkArray struct {
	Type         string `json:"type"` // "array"
	ElementType  any    `json:"elementType"`
	ContainsNull bool   `json:"containsNull"`
}

type sparkMap struct {
	Type              string `json:"type"` // "map"
	KeyType           any    `json:"keyType"`
	ValueType         any    `json:"valueType"`
	ValueContainsNull bool   `json:"valueContainsNull"`
}

// schemaString renders an Iceberg schema as the Spark StructType JSON that
// Delta Sharing's metaData.schemaString carries.
func schemaString(sc *iceberg.Schema) (string, error) {
	st, err := sparkStructOf(sc.Fields())
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(st)
	return string(b), err
}

func sparkStructOf(fields []iceberg.NestedField) (sparkStruct, error) {
	out := sparkStruct{Type: "struct", Fields: make([]sparkField, 0, len(fields))}
	for _, f := range fields {
		t, err := sparkType(f.Type)
		if err != nil {
			return sparkStruct{}, fmt.Errorf("column %s: %w", f.Name, err)
		}
		md := map[string]any{}
		if f.Doc != "" {
			md["comment"] = f.Doc
		}
		out.Fields = append(out.Fields, sparkField{Name: f.Name, Type: t, Nullable: !f.Required, Metadata: md})
	}
	return out, nil
}

// sparkType maps one Iceberg type to its Spark (Delta) type:
//
//	boolean→boolean, int→integer, long→long, float→float, double→double,
//	decimal(P,S)→decimal(P,S), date→date, string→string,
//	timestamp, timestamptz, timestamp_ns, timestamptz_ns→timestamp
//	(microseconds, UTC), time→long (microseconds of the day),
//	uuid, fixed(L), binary→binary, struct/list/map→struct/array/map.
//
// Other types (variant, geometry, geography, unknown) have no Delta
// equivalent in the parquet format: the table cannot be shared.
func sparkType(t iceberg.Type) (any, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "boolean", nil
	case iceberg.Int32Type:
		return "integer", nil
	case iceberg.Int64Type, iceberg.TimeType:
		return "long", nil
	case iceberg.Float32Type:
		return "float", nil
	case iceberg.Float64Type:
		return "double", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale()), nil
	case iceberg.DateType:
		return "date", nil
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return "timestamp", nil
	case iceberg.StringType:
		return "string", nil
	case iceberg.UUIDType, iceberg.FixedType, iceberg.BinaryType:
		return "binary", nil
	case *iceberg.StructType:
		return sparkStructOf(t.FieldList)
	case *iceberg.ListType:
		e, err := sparkType(t.Element)
		if err != nil {
			return nil, err
		}
		return sparkArray{Type: "array", ElementType: e, ContainsNull: !t.ElementRequired}, nil
	case *iceberg.MapType:
		k, err := sparkType(t.KeyType)
		if err != nil {
			return nil, err
		}
		v, err := sparkType(t.ValueType)
		if err != nil {
			return nil, err
		}
		return sparkMap{Type: "map", KeyType: k, ValueType: v, ValueContainsNull: !t.ValueRequired}, nil
	}
	return nil, fmt.Errorf("type %s has no Delta Sharing (parquet format) equivalent", t)
}
