// Package udf parses and validates Iceberg UDF metadata: the portable,
// self-contained metadata of a SQL user-defined function that the Iceberg
// REST spec serves with loadFunction (schema FunctionMetadata) and the
// Iceberg UDF spec describes. It is domain code: no HTTP, no storage.
//
// Validation follows the REST spec's schemas and the UDF spec's rules:
// format-version 1, a UUID, definitions whose definition-id is the
// canonical string derived from their parameter types (see DefinitionID),
// unique definition-ids and specific-names, a current-version-id that names
// one of the definition's versions, function-type "udf" or "udtf" (a udtf
// returns a struct), SQL representations, and a definition-log whose last
// entry selects exactly the current version of every definition.
package udf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// FormatVersion is the only UDF metadata format version.
const FormatVersion = 1

// MaxTypeDepth bounds the nesting of list, map and struct types.
const MaxTypeDepth = 32

// Metadata is FunctionMetadata. Fields the spec does not define are kept
// by Normalize (forward compatibility) but not modelled here.
type Metadata struct {
	FunctionUUID  string            `json:"function-uuid"`
	FormatVersion int               `json:"format-version"`
	Definitions   []Definition      `json:"definitions"`
	DefinitionLog []LogEntry        `json:"definition-log"`
	Location      string            `json:"location,omitempty"`
	Properties    map[string]string `json:"properties,omitempty"`
	Secure        bool              `json:"secure,omitempty"`
	Doc           string            `json:"doc,omitempty"`
}

// Definition is one overload (FunctionDefinition).
type Definition struct {
	DefinitionID     string      `json:"definition-id"`
	SpecificName     *string     `json:"specific-name,omitempty"`
	Parameters       []Parameter `json:"parameters"`
	ReturnType       Type        `json:"return-type"`
	ReturnNullable   *bool       `json:"return-nullable,omitempty"`
	Versions         []Version   `json:"versions"`
	CurrentVersionID *int64      `json:"current-version-id"`
	FunctionType     string      `json:"function-type"`
	Doc              string      `json:"doc,omitempty"`
}

// Parameter is a FunctionParameter.
type Parameter struct {
	Type Type   `json:"type"`
	Name string `json:"name"`
	Doc  string `json:"doc,omitempty"`
}

// Version is a FunctionDefinitionVersion.
type Version struct {
	VersionID       *int64           `json:"version-id"`
	Representations []Representation `json:"representations"`
	Deterministic   bool             `json:"deterministic,omitempty"`
	OnNullInput     string           `json:"on-null-input,omitempty"`
	TimestampMS     *int64           `json:"timestamp-ms"`
}

// Representation is a FunctionSQLRepresentation (the only kind the spec has).
type Representation struct {
	Type    string `json:"type"`
	Dialect string `json:"dialect"`
	SQL     string `json:"sql"`
}

// LogEntry is a FunctionDefinitionLogEntry.
type LogEntry struct {
	TimestampMS        *int64       `json:"timestamp-ms"`
	DefinitionVersions []VersionRef `json:"definition-versions"`
}

// VersionRef is a FunctionDefinitionVersionRef.
type VersionRef struct {
	DefinitionID string `json:"definition-id"`
	VersionID    *int64 `json:"version-id"`
}

// Type is a FunctionDataType: a primitive type string, or a list, map or
// struct object. Fields of type objects the spec does not name are
// ignored, as it requires.
type Type struct {
	Prim    string // primitive type string; "" for a nested type
	Kind    string // "list", "map" or "struct" for a nested type
	Element *Type
	Key     *Type
	Value   *Type
	Fields  []Field
}

// Field is a FunctionStructField.
type Field struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
}

// MarshalJSON renders t in the spec's encoding.
func (t Type) MarshalJSON() ([]byte, error) {
	switch t.Kind {
	case "":
		return json.Marshal(t.Prim)
	case "list":
		return json.Marshal(struct {
			Type    string `json:"type"`
			Element *Type  `json:"element"`
		}{"list", t.Element})
	case "map":
		return json.Marshal(struct {
			Type  string `json:"type"`
			Key   *Type  `json:"key"`
			Value *Type  `json:"value"`
		}{"map", t.Key, t.Value})
	default:
		fs := t.Fields
		if fs == nil {
			fs = []Field{}
		}
		return json.Marshal(struct {
			Type   string  `json:"type"`
			Fields []Field `json:"fields"`
		}{"struct", fs})
	}
}

// UnmarshalJSON parses a type string or a nested type object. It checks
// the shape only; Validate checks the type names.
func (t *Type) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*t = Type{}
		return json.Unmarshal(b, &t.Prim)
	}
	var obj struct {
		Type    *string `json:"type"`
		Element *Type   `json:"element"`
		Key     *Type   `json:"key"`
		Value   *Type   `json:"value"`
		Fields  *[]struct {
			Name *string `json:"name"`
			Type *Type   `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	if obj.Type == nil {
		return errors.New(`a nested type needs "type"`)
	}
	*t = Type{Kind: *obj.Type}
	switch *obj.Type {
	case "list":
		if obj.Element == nil {
			return errors.New(`a list type needs "element"`)
		}
		t.Element = obj.Element
	case "map":
		if obj.Key == nil || obj.Value == nil {
			return errors.New(`a map type needs "key" and "value"`)
		}
		t.Key, t.Value = obj.Key, obj.Value
	case "struct":
		if obj.Fields == nil {
			return errors.New(`a struct type needs "fields"`)
		}
		t.Fields = make([]Field, 0, len(*obj.Fields))
		for _, f := range *obj.Fields {
			if f.Name == nil || f.Type == nil {
				return errors.New(`a struct field needs "name" and "type"`)
			}
			t.Fields = append(t.Fields, Field{Name: *f.Name, Type: *f.Type})
		}
	default:
		return fmt.Errorf("unknown nested type %q (want list, map or struct; primitives are strings)", *obj.Type)
	}
	return nil
}

var (
	decimalRE = regexp.MustCompile(`^decimal\((\d{1,2}),(\d{1,2})\)$`)
	fixedRE   = regexp.MustCompile(`^fixed\[(\d{1,9})\]$`)
	geoRE     = regexp.MustCompile(`^(geometry|geography)(\([^\s"'()]+\))?$`)
)

// primitives are Iceberg's primitive and semi-structured type names that
// take no parameters.
var primitives = map[string]bool{
	"boolean": true, "int": true, "long": true, "float": true, "double": true,
	"date": true, "time": true, "timestamp": true, "timestamptz": true,
	"timestamp_ns": true, "timestamptz_ns": true, "string": true, "uuid": true,
	"binary": true, "variant": true, "unknown": true,
}

// validate checks t's type names and nesting.
func (t Type) validate(depth int) error {
	if depth > MaxTypeDepth {
		return fmt.Errorf("types nest deeper than %d levels", MaxTypeDepth)
	}
	switch t.Kind {
	case "":
		return validPrimitive(t.Prim)
	case "list":
		return t.Element.validate(depth + 1)
	case "map":
		if err := t.Key.validate(depth + 1); err != nil {
			return err
		}
		return t.Value.validate(depth + 1)
	case "struct":
		seen := make(map[string]bool, len(t.Fields))
		for _, f := range t.Fields {
			if f.Name == "" {
				return errors.New("a struct field has an empty name")
			}
			if seen[f.Name] {
				return fmt.Errorf("struct field %q appears twice", f.Name)
			}
			seen[f.Name] = true
			if err := f.Type.validate(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown nested type %q", t.Kind)
}

func validPrimitive(s string) error {
	switch {
	case s == "":
		return errors.New("a type string is empty")
	case strings.ContainsAny(s, " \t\r\n\"'"):
		return fmt.Errorf("type %q contains a space or quote (the spec forbids both)", s)
	case primitives[s], geoRE.MatchString(s):
		return nil
	}
	if m := decimalRE.FindStringSubmatch(s); m != nil {
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		if p < 1 || p > 38 || sc > p {
			return fmt.Errorf("type %q: decimal precision must be 1 to 38 and scale at most the precision", s)
		}
		return nil
	}
	if m := fixedRE.FindStringSubmatch(s); m != nil {
		if n, _ := strconv.Atoi(m[1]); n < 1 {
			return fmt.Errorf("type %q: fixed length must be positive", s)
		}
		return nil
	}
	return fmt.Errorf("unknown type %q (want an Iceberg primitive such as int, string, decimal(9,2), or a list, map or struct object)", s)
}

// canonical renders t as in a definition-id.
func (t Type) canonical(b *strings.Builder) {
	switch t.Kind {
	case "":
		b.WriteString(t.Prim)
	case "list":
		b.WriteString("list<")
		t.Element.canonical(b)
		b.WriteByte('>')
	case "map":
		b.WriteString("map<")
		t.Key.canonical(b)
		b.WriteByte(',')
		t.Value.canonical(b)
		b.WriteByte('>')
	case "struct":
		b.WriteString("struct<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(fieldNameEscaper.Replace(f.Name))
			b.WriteByte(':')
			f.Type.canonical(b)
		}
		b.WriteByte('>')
	}
}

// fieldNameEscaper escapes the separators of the definition-id format in a
// struct field name, so that distinct signatures get distinct ids.
var fieldNameEscaper = strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`, `<`, `\<`, `>`, `\>`)

// DefinitionID returns the canonical definition-id of a definition with
// these parameters: the parameter types in order, comma-separated with no
// space; list<e>, map<k,v>, struct<name:type,...> for nested types (the
// characters \ : , < > of a struct field name escaped with \).
func DefinitionID(params []Parameter) string {
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		p.Type.canonical(&b)
	}
	return b.String()
}

// invalid is the error of metadata that breaks the spec: Invalid, entity
// "metadata" (a 400 at the REST edge).
func invalid(format string, args ...any) error {
	return floe.E(floe.Invalid, "metadata", "invalid function metadata: "+format, args...)
}

// Parse decodes and validates function metadata.
func Parse(raw []byte) (*Metadata, error) {
	var md Metadata
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&md); err != nil {
		return nil, invalid("%s", jsonMessage(err))
	}
	if dec.More() {
		return nil, invalid("trailing data after the JSON object")
	}
	if err := md.Validate(); err != nil {
		return nil, err
	}
	return &md, nil
}

func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %s: JSON %s where %s was expected", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// Validate checks md against the spec (see the package documentation).
func (md *Metadata) Validate() error {
	if md.FormatVersion != FormatVersion {
		return invalid("format-version must be %d, not %d", FormatVersion, md.FormatVersion)
	}
	if _, err := uuid.Parse(md.FunctionUUID); err != nil || len(md.FunctionUUID) != 36 {
		return invalid("function-uuid %q is not a UUID", md.FunctionUUID)
	}
	if md.Definitions == nil {
		return invalid("definitions is required")
	}
	if len(md.Definitions) == 0 {
		return invalid("a function needs at least one definition")
	}
	current := make(map[string]int64, len(md.Definitions))
	versions := make(map[string]map[int64]bool, len(md.Definitions))
	names := map[string]bool{}
	for i := range md.Definitions {
		d := &md.Definitions[i]
		if err := d.validate(); err != nil {
			return invalid("definition %q: %s", d.DefinitionID, err)
		}
		if _, dup := current[d.DefinitionID]; dup {
			return invalid("definition-id %q appears twice (two definitions with the same parameter types)", d.DefinitionID)
		}
		if d.SpecificName != nil {
			if names[*d.SpecificName] {
				return invalid("specific-name %q is used by two definitions", *d.SpecificName)
			}
			names[*d.SpecificName] = true
		}
		current[d.DefinitionID] = *d.CurrentVersionID
		vs := make(map[int64]bool, len(d.Versions))
		for _, v := range d.Versions {
			vs[*v.VersionID] = true
		}
		versions[d.DefinitionID] = vs
	}
	if md.DefinitionLog == nil {
		return invalid("definition-log is required")
	}
	if len(md.DefinitionLog) == 0 {
		return invalid("definition-log must record the current definition versions")
	}
	var prev int64
	for i, e := range md.DefinitionLog {
		if e.TimestampMS == nil {
			return invalid("definition-log entry %d has no timestamp-ms", i)
		}
		if *e.TimestampMS < prev {
			return invalid("definition-log entry %d is older than the entry before it", i)
		}
		prev = *e.TimestampMS
		if e.DefinitionVersions == nil {
			return invalid("definition-log entry %d has no definition-versions", i)
		}
		for _, r := range e.DefinitionVersions {
			if r.VersionID == nil {
				return invalid("definition-log entry %d: a reference to %q has no version-id", i, r.DefinitionID)
			}
		}
	}
	last := md.DefinitionLog[len(md.DefinitionLog)-1]
	seen := make(map[string]bool, len(last.DefinitionVersions))
	for _, r := range last.DefinitionVersions {
		cur, ok := current[r.DefinitionID]
		switch {
		case !ok:
			return invalid("the last definition-log entry names definition %q, which does not exist", r.DefinitionID)
		case seen[r.DefinitionID]:
			return invalid("the last definition-log entry names definition %q twice", r.DefinitionID)
		case *r.VersionID != cur:
			return invalid("the last definition-log entry selects version %d of %q, whose current-version-id is %d", *r.VersionID, r.DefinitionID, cur)
		}
		seen[r.DefinitionID] = true
	}
	if len(seen) != len(current) {
		for id := range current {
			if !seen[id] {
				return invalid("the last definition-log entry does not select the current version of definition %q", id)
			}
		}
	}
	return nil
}

func (d *Definition) validate() error {
	if d.Parameters == nil {
		return errors.New("parameters is required (an empty list for none)")
	}
	seen := make(map[string]bool, len(d.Parameters))
	for i, p := range d.Parameters {
		if p.Name == "" {
			return fmt.Errorf("parameter %d has no name", i+1)
		}
		if seen[p.Name] {
			return fmt.Errorf("parameter %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if err := p.Type.validate(0); err != nil {
			return fmt.Errorf("parameter %q: %w", p.Name, err)
		}
	}
	if want := DefinitionID(d.Parameters); d.DefinitionID != want {
		return fmt.Errorf("definition-id must be %q, derived from the parameter types", want)
	}
	if d.SpecificName != nil && *d.SpecificName == "" {
		return errors.New("specific-name is empty")
	}
	if d.ReturnType.Kind == "" && d.ReturnType.Prim == "" {
		return errors.New("return-type is required")
	}
	if err := d.ReturnType.validate(0); err != nil {
		return fmt.Errorf("return-type: %w", err)
	}
	switch d.FunctionType {
	case "udf":
	case "udtf":
		if d.ReturnType.Kind != "struct" {
			return errors.New(`the return-type of a "udtf" must be a struct describing its output`)
		}
	case "":
		return errors.New(`function-type is required ("udf" or "udtf")`)
	default:
		return fmt.Errorf(`function-type %q is neither "udf" nor "udtf"`, d.FunctionType)
	}
	if len(d.Versions) == 0 {
		return errors.New("a definition needs at least one version")
	}
	if d.CurrentVersionID == nil {
		return errors.New("current-version-id is required")
	}
	ids := make(map[int64]bool, len(d.Versions))
	for _, v := range d.Versions {
		if v.VersionID == nil {
			return errors.New("a version has no version-id")
		}
		if ids[*v.VersionID] {
			return fmt.Errorf("version-id %d appears twice", *v.VersionID)
		}
		ids[*v.VersionID] = true
		if err := v.validate(); err != nil {
			return fmt.Errorf("version %d: %w", *v.VersionID, err)
		}
	}
	if !ids[*d.CurrentVersionID] {
		return fmt.Errorf("current-version-id %d is not one of its versions", *d.CurrentVersionID)
	}
	return nil
}

func (v *Version) validate() error {
	if v.TimestampMS == nil {
		return errors.New("timestamp-ms is required")
	}
	switch v.OnNullInput {
	case "", "return-null", "call":
	default:
		return fmt.Errorf(`on-null-input %q is neither "return-null" nor "call"`, v.OnNullInput)
	}
	if len(v.Representations) == 0 {
		return errors.New("a version needs at least one representation")
	}
	dialects := make(map[string]bool, len(v.Representations))
	for _, r := range v.Representations {
		switch {
		case r.Type != "sql":
			return fmt.Errorf(`representation type %q is not "sql"`, r.Type)
		case r.Dialect == "":
			return errors.New("a representation has no dialect")
		case r.SQL == "":
			return fmt.Errorf("the %s representation has no sql", r.Dialect)
		case dialects[strings.ToLower(r.Dialect)]:
			return fmt.Errorf("two representations for dialect %q", r.Dialect)
		}
		dialects[strings.ToLower(r.Dialect)] = true
	}
	return nil
}

// Normalize returns raw (valid metadata) as a compact JSON object with
// location set to loc, keeping fields the spec does not define.
func Normalize(raw []byte, loc string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalid("%s", jsonMessage(err))
	}
	l, err := json.Marshal(loc)
	if err != nil {
		return nil, fmt.Errorf("udf: encode location: %w", err)
	}
	obj["location"] = l
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("udf: encode metadata: %w", err)
	}
	return out, nil
}
