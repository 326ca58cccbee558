package udf_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/udf"
)

// valid is a two-definition scalar UDF in the REST spec's FunctionMetadata form.
const valid = `{
 "function-uuid": "42fd3f91-bc10-41c1-8a52-92b57dd0a9b2",
 "format-version": 1,
 "definitions": [
  {"definition-id": "int", "specific-name": "add_one_int",
   "parameters": [{"name": "x", "type": "int", "doc": "Input integer"}],
   "return-type": "int", "function-type": "udf",
   "versions": [
    {"version-id": 1, "deterministic": true, "representations": [{"type": "sql", "dialect": "trino", "sql": "x + 2"}], "timestamp-ms": 1734507000123},
    {"version-id": 2, "deterministic": true, "on-null-input": "return-null", "representations": [{"type": "sql", "dialect": "trino", "sql": "x + 1"}, {"type": "sql", "dialect": "spark", "sql": "x + 1"}], "timestamp-ms": 1735507000124}],
   "current-version-id": 2},
  {"definition-id": "decimal(9,2),list<string>,map<string,int>,struct<a:int,b\\:c:string>",
   "parameters": [{"name": "d", "type": "decimal(9,2)"}, {"name": "l", "type": {"type": "list", "element": "string", "element-id": 3}},
     {"name": "m", "type": {"type": "map", "key": "string", "value": "int"}},
     {"name": "s", "type": {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int"}, {"name": "b:c", "type": "string"}]}}],
   "return-type": {"type": "struct", "fields": [{"name": "n", "type": "long"}]}, "function-type": "udtf",
   "versions": [{"version-id": 1, "representations": [{"type": "sql", "dialect": "spark", "sql": "SELECT 1 AS n"}], "timestamp-ms": 1734507001123}],
   "current-version-id": 1}
 ],
 "definition-log": [
  {"timestamp-ms": 1734507001123, "definition-versions": [{"definition-id": "int", "version-id": 1}]},
  {"timestamp-ms": 1735507000124, "definition-versions": [{"definition-id": "int", "version-id": 2},
    {"definition-id": "decimal(9,2),list<string>,map<string,int>,struct<a:int,b\\:c:string>", "version-id": 1}]}
 ],
 "doc": "Overloaded", "secure": true, "properties": {"owner": "bi"}, "x-unknown": 1
}`

// edit returns valid with one JSON path set (nil deletes it).
func edit(t *testing.T, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(valid), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func def(m map[string]any, i int) map[string]any { return m["definitions"].([]any)[i].(map[string]any) }

func version(m map[string]any, d, v int) map[string]any {
	return def(m, d)["versions"].([]any)[v].(map[string]any)
}

func TestParseValid(t *testing.T) {
	md, err := udf.Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Definitions) != 2 || !md.Secure || *md.Definitions[0].CurrentVersionID != 2 {
		t.Errorf("parsed %+v", md)
	}
}

func TestParseInvalid(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"format version 2", func(m map[string]any) { m["format-version"] = 2 }, "format-version must be 1"},
		{"no format version", func(m map[string]any) { delete(m, "format-version") }, "format-version must be 1"},
		{"bad uuid", func(m map[string]any) { m["function-uuid"] = "nope" }, "is not a UUID"},
		{"no definitions", func(m map[string]any) { delete(m, "definitions") }, "definitions is required"},
		{"empty definitions", func(m map[string]any) { m["definitions"] = []any{} }, "at least one definition"},
		{"wrong definition-id", func(m map[string]any) { def(m, 0)["definition-id"] = "long" }, `definition-id must be "int"`},
		{"definition-id with space", func(m map[string]any) {
			def(m, 1)["definition-id"] = "decimal(9,2), list<string>,map<string,int>,struct<a:int,b\\:c:string>"
		}, "derived from the parameter types"},
		{"unescaped struct field", func(m map[string]any) {
			def(m, 1)["definition-id"] = "decimal(9,2),list<string>,map<string,int>,struct<a:int,b:c:string>"
		}, "derived from the parameter types"},
		{"duplicate definition-id", func(m map[string]any) {
			d := def(m, 0)
			m["definitions"] = []any{d, d}
		}, "appears twice"},
		{"duplicate specific-name", func(m map[string]any) { def(m, 1)["specific-name"] = "add_one_int" }, `specific-name "add_one_int" is used by two`},
		{"empty specific-name", func(m map[string]any) { def(m, 1)["specific-name"] = "" }, "specific-name is empty"},
		{"current version missing", func(m map[string]any) { def(m, 0)["current-version-id"] = 7 }, "current-version-id 7 is not one of its versions"},
		{"no current version", func(m map[string]any) { delete(def(m, 0), "current-version-id") }, "current-version-id is required"},
		{"duplicate version", func(m map[string]any) { version(m, 0, 1)["version-id"] = 1 }, "version-id 1 appears twice"},
		{"no versions", func(m map[string]any) { def(m, 0)["versions"] = []any{} }, "at least one version"},
		{"no timestamp", func(m map[string]any) { delete(version(m, 0, 0), "timestamp-ms") }, "timestamp-ms is required"},
		{"bad on-null-input", func(m map[string]any) { version(m, 0, 0)["on-null-input"] = "returns_null" }, "on-null-input"},
		{"non-sql representation", func(m map[string]any) {
			version(m, 0, 0)["representations"] = []any{map[string]any{"type": "python", "dialect": "x", "sql": "y"}}
		}, `representation type "python"`},
		{"no sql", func(m map[string]any) {
			version(m, 0, 0)["representations"] = []any{map[string]any{"type": "sql", "dialect": "x"}}
		}, "has no sql"},
		{"two bodies for a dialect", func(m map[string]any) {
			r := map[string]any{"type": "sql", "dialect": "spark", "sql": "x"}
			version(m, 0, 0)["representations"] = []any{r, r}
		}, "two representations"},
		{"no representations", func(m map[string]any) { version(m, 0, 0)["representations"] = []any{} }, "at least one representation"},
		{"unknown type", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": "integer"}}
			def(m, 0)["definition-id"] = "integer"
		}, `unknown type "integer"`},
		{"type with space", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": "decimal(9, 2)"}}
		}, "space or quote"},
		{"nested type as a string", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": "list<int>"}}
			def(m, 0)["definition-id"] = "list<int>"
		}, `unknown type "list<int>"`},
		{"decimal precision", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": "decimal(39,2)"}}
			def(m, 0)["definition-id"] = "decimal(39,2)"
		}, "precision"},
		{"list without element", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": map[string]any{"type": "list"}}}
		}, `needs "element"`},
		{"unknown nested", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": map[string]any{"type": "set"}}}
		}, `unknown nested type "set"`},
		{"duplicate struct field", func(m map[string]any) {
			def(m, 1)["return-type"] = map[string]any{"type": "struct", "fields": []any{
				map[string]any{"name": "n", "type": "int"}, map[string]any{"name": "n", "type": "int"}}}
		}, `struct field "n" appears twice`},
		{"duplicate parameter", func(m map[string]any) {
			p := map[string]any{"name": "x", "type": "int"}
			def(m, 0)["parameters"] = []any{p, p}
			def(m, 0)["definition-id"] = "int,int"
		}, `parameter "x" appears twice`},
		{"unnamed parameter", func(m map[string]any) {
			def(m, 0)["parameters"] = []any{map[string]any{"type": "int"}}
		}, "parameter 1 has no name"},
		{"no parameters", func(m map[string]any) { delete(def(m, 0), "parameters") }, "parameters is required"},
		{"no return type", func(m map[string]any) { delete(def(m, 0), "return-type") }, "return-type is required"},
		{"udtf returning int", func(m map[string]any) { def(m, 0)["function-type"] = "udtf" }, "must be a struct"},
		{"no function-type", func(m map[string]any) { delete(def(m, 0), "function-type") }, "function-type is required"},
		{"bad function-type", func(m map[string]any) { def(m, 0)["function-type"] = "udaf" }, `function-type "udaf"`},
		{"no log", func(m map[string]any) { delete(m, "definition-log") }, "definition-log is required"},
		{"empty log", func(m map[string]any) { m["definition-log"] = []any{} }, "must record the current"},
		{"log out of order", func(m map[string]any) {
			l := m["definition-log"].([]any)
			m["definition-log"] = []any{l[1], l[0]}
		}, "older than the entry before"},
		{"log not current", func(m map[string]any) {
			l := m["definition-log"].([]any)
			m["definition-log"] = []any{l[0]}
		}, "selects version 1 of \"int\", whose current-version-id is 2"},
		{"log names a missing definition", func(m map[string]any) {
			e := m["definition-log"].([]any)[1].(map[string]any)
			e["definition-versions"] = append(e["definition-versions"].([]any), map[string]any{"definition-id": "long", "version-id": 1})
		}, `names definition "long", which does not exist`},
		{"log misses a definition", func(m map[string]any) {
			e := m["definition-log"].([]any)[1].(map[string]any)
			e["definition-versions"] = e["definition-versions"].([]any)[:1]
		}, "does not select the current version"},
		{"string where a number is", func(m map[string]any) { m["format-version"] = "1" }, "field format-version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := udf.Parse(edit(t, c.edit))
			if err == nil {
				t.Fatal("accepted")
			}
			if floe.KindOf(err) != floe.Invalid || floe.EntityOf(err) != "metadata" {
				t.Errorf("kind %v entity %q, want invalid metadata", floe.KindOf(err), floe.EntityOf(err))
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDefinitionID(t *testing.T) {
	typ := func(s string) udf.Type {
		var ty udf.Type
		if err := json.Unmarshal([]byte(s), &ty); err != nil {
			t.Fatal(err)
		}
		return ty
	}
	cases := []struct {
		types []string
		want  string
	}{
		{nil, ""},
		{[]string{`"int"`}, "int"},
		{[]string{`"int"`, `"string"`}, "int,string"},
		{[]string{`"decimal(9,2)"`, `"fixed[16]"`}, "decimal(9,2),fixed[16]"},
		{[]string{`{"type":"list","element":"int"}`}, "list<int>"},
		{[]string{`{"type":"map","key":"string","value":{"type":"list","element":"long"}}`}, "map<string,list<long>>"},
		{[]string{`{"type":"struct","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`}, "struct<id:int,name:string>"},
		{[]string{`{"type":"struct","fields":[{"name":"a,b<c>:d\\","type":"int"}]}`}, `struct<a\,b\<c\>\:d\\:int>`},
	}
	for _, c := range cases {
		var ps []udf.Parameter
		for i, s := range c.types {
			ps = append(ps, udf.Parameter{Name: string(rune('a' + i)), Type: typ(s)})
		}
		if got := udf.DefinitionID(ps); got != c.want {
			t.Errorf("DefinitionID(%v) = %q, want %q", c.types, got, c.want)
		}
	}
}

func TestNormalizeKeepsUnknownFieldsAndSetsLocation(t *testing.T) {
	out, err := udf.Normalize([]byte(valid), "s3://b/ns/functions/f-1")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m["location"] != "s3://b/ns/functions/f-1" || m["x-unknown"] != float64(1) {
		t.Errorf("normalized %s", out)
	}
	if _, err := udf.Parse(out); err != nil {
		t.Errorf("normalized metadata does not parse: %v", err)
	}
}

func TestTypeDepthBounded(t *testing.T) {
	ty := `"int"`
	for range udf.MaxTypeDepth + 2 {
		ty = `{"type":"list","element":` + ty + `}`
	}
	id := strings.Repeat("list<", udf.MaxTypeDepth+2) + "int" + strings.Repeat(">", udf.MaxTypeDepth+2)
	b := edit(t, func(m map[string]any) {
		var tv any
		_ = json.Unmarshal([]byte(ty), &tv)
		def(m, 0)["parameters"] = []any{map[string]any{"name": "x", "type": tv}}
		def(m, 0)["definition-id"] = id
	})
	if _, err := udf.Parse(b); err == nil || !strings.Contains(err.Error(), "nest deeper") {
		t.Errorf("err %v, want the depth bound", err)
	}
}

// FuzzParse: any input either parses into metadata that validates again
// after a round trip through Normalize, or is refused as Invalid; it never
// panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format-version":1,"function-uuid":"42fd3f91-bc10-41c1-8a52-92b57dd0a9b2","definitions":[{"parameters":[],"definition-id":"","return-type":{"type":"list","element":{"type":"map","key":"int","value":"int"}}}]}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := udf.Parse(b)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		if md.FormatVersion != 1 || len(md.Definitions) == 0 {
			t.Fatalf("accepted %s", b)
		}
		out, err := udf.Normalize(b, "file:///x")
		if err != nil {
			t.Fatalf("normalize valid metadata: %v", err)
		}
		if _, err := udf.Parse(out); err != nil {
			t.Fatalf("normalized metadata invalid: %v\n%s", err, out)
		}
	})
}
