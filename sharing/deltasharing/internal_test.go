package deltasharing

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestSchemaString(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool, Required: true},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "dec", Type: iceberg.DecimalTypeOf(38, 9), Doc: "money"},
		iceberg.NestedField{ID: 7, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 9, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 10, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 11, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 12, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 13, Name: "fx", Type: iceberg.FixedTypeOf(4)},
		iceberg.NestedField{ID: 14, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 15, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 16, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true}}}},
		iceberg.NestedField{ID: 17, Name: "ls", Type: &iceberg.ListType{ElementID: 18, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 19, Name: "mp", Type: &iceberg.MapType{KeyID: 20, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 21, ValueType: iceberg.PrimitiveTypes.Int64, ValueRequired: true}},
	)
	got, err := schemaString(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[` +
		`{"name":"b","type":"boolean","nullable":false,"metadata":{}},` +
		`{"name":"i","type":"integer","nullable":true,"metadata":{}},` +
		`{"name":"l","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"f","type":"float","nullable":true,"metadata":{}},` +
		`{"name":"d","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"dec","type":"decimal(38,9)","nullable":true,"metadata":{"comment":"money"}},` +
		`{"name":"dt","type":"date","nullable":true,"metadata":{}},` +
		`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"tstz","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"u","type":"binary","nullable":true,"metadata":{}},` +
		`{"name":"bin","type":"binary","nullable":true,"metadata":{}},` +
		`{"name":"fx","type":"binary","nullable":true,"metadata":{}},` +
		`{"name":"tm","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"st","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"ls","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"mp","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":false},"nullable":true,"metadata":{}}]}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := schemaString(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.VariantType{}})); err == nil {
		t.Fatal("variant mapped")
	}
}

// file is a fileEntry with partition values and bounds.
func file(parts map[string]pval, min, max map[string]pval, nulls map[string]int64, records int64) *fileEntry {
	f := &fileEntry{cols: &columns{parts: map[string]int{}, stats: map[string]int{}}, records: records}
	for k, v := range parts {
		f.cols.parts[k] = len(f.parts)
		f.parts = append(f.parts, v)
	}
	stat := func(k string) int {
		i, ok := f.cols.stats[k]
		if !ok {
			i = len(f.lo)
			f.cols.stats[k] = i
			f.lo, f.hi, f.nulls = append(f.lo, pval{kind: 'x'}), append(f.hi, pval{kind: 'x'}), append(f.nulls, -1)
		}
		return i
	}
	for k, v := range min {
		f.lo[stat(k)] = v
	}
	for k, v := range max {
		f.hi[stat(k)] = v
	}
	for k, v := range nulls {
		f.nulls[stat(k)] = v
	}
	return f
}

func TestEval(t *testing.T) {
	eu := file(map[string]pval{"region": {kind: 's', s: "eu"}, "day": {kind: 'd', n: 20000}, "n": {kind: 'n', n: 5}},
		map[string]pval{"id": {kind: 'n', n: 10}, "at": {kind: 't', n: 1_700_000_000_000_000}},
		map[string]pval{"id": {kind: 'n', n: 20}, "at": {kind: 't', n: 1_700_000_100_000_000}},
		map[string]int64{"id": 0, "x": 3}, 3)
	nullPart := file(map[string]pval{"region": {}}, nil, nil, nil, 1)
	for _, c := range []struct {
		pred  string
		f     *fileEntry
		stats bool
		want  tri
	}{
		{"region = 'eu'", eu, false, yes},
		{"REGION = 'us'", eu, false, no},
		{"region <> 'us'", eu, false, yes},
		{"region IN ('us', 'eu')", eu, false, yes},
		{"region NOT IN ('us', 'eu')", eu, false, no},
		{"region = 'eu' AND n > 4", eu, false, yes},
		{"region = 'eu' AND n > 5", eu, false, no},
		{"region = 'us' OR n >= 5", eu, false, yes},
		{"n = '5'", eu, false, yes},
		{"n = 'five'", eu, false, maybe},
		{"day = DATE '2024-10-04'", eu, false, yes},
		{"day < '2024-10-04'", eu, false, no},
		{"id = 15", eu, false, maybe}, // not a partition: unknown without stats
		{"id = 15", eu, true, maybe},
		{"id = 25", eu, true, no},
		{"id < 10", eu, true, no},
		{"id <= 10", eu, true, maybe},
		{"id > 20", eu, true, no},
		{"id >= 20", eu, true, maybe},
		{"id IS NULL", eu, true, no},
		{"x IS NULL", eu, true, yes},
		{"at > TIMESTAMP '2023-11-14 22:15:00'", eu, true, no},
		{"at > '2023-11-14T22:10:00Z'", eu, true, maybe},
		{"region = 'eu'", nullPart, false, no},
		{"region IS NULL", nullPart, false, yes},
		{"region IS NOT NULL", nullPart, false, no},
		{"NOT (region = 'eu')", eu, false, no},
		{"(region = 'eu' OR region = 'us') AND NOT n = 6", eu, false, yes},
		{`"region" = 'eu'`, eu, false, yes},
	} {
		e, err := parseSQL(c.pred)
		if err != nil {
			t.Fatalf("%s: %v", c.pred, err)
		}
		if got := eval(e, c.f, c.stats); got != c.want {
			t.Errorf("%s (stats %v): %d, want %d", c.pred, c.stats, got, c.want)
		}
	}
	for _, bad := range []string{"", "region", "region =", "= 'eu'", "region = 'eu", "region == 'eu'", "region IN ()",
		"region IN ('a'", "(region = 'a'", "region = 'a')", "region = 'a' AND", "AND = 1", "region IS 'a'", "1 = 1",
		"region = 1e999", "region ~ 'a'", "region = 'a' OR OR", strings.Repeat("(", 100) + "a = 1" + strings.Repeat(")", 100)} {
		if err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted", bad)
		}
	}
}

func TestJSONPredicate(t *testing.T) {
	eu := file(map[string]pval{"region": {kind: 's', s: "eu"}}, map[string]pval{"id": {kind: 'n', n: 10}},
		map[string]pval{"id": {kind: 'n', n: 20}}, map[string]int64{"id": 0}, 3)
	col := func(n string) string { return `{"op":"column","name":"` + n + `","valueType":"int"}` }
	lit := func(v, typ string) string { return `{"op":"literal","value":"` + v + `","valueType":"` + typ + `"}` }
	bin := func(op, a, b string) string { return `{"op":"` + op + `","children":[` + a + `,` + b + `]}` }
	for _, c := range []struct {
		pred string
		want tri
	}{
		{bin("equal", col("region"), lit("eu", "string")), yes},
		{bin("equal", lit("eu", "string"), col("region")), yes},
		{bin("lessThan", col("id"), lit("10", "int")), no},
		{bin("lessThan", lit("20", "int"), col("id")), no}, // 20 < id: id > 20
		{bin("greaterThanOrEqual", col("id"), lit("20", "long")), maybe},
		{`{"op":"not","children":[` + bin("equal", col("region"), lit("eu", "string")) + `]}`, no},
		{`{"op":"and","children":[` + bin("equal", col("region"), lit("eu", "string")) + `,` + bin("greaterThan", col("id"), lit("30", "int")) + `]}`, no},
		{`{"op":"or","children":[` + bin("equal", col("region"), lit("us", "string")) + `,` + bin("greaterThan", col("id"), lit("15", "int")) + `]}`, maybe},
		{`{"op":"isNull","children":[` + col("id") + `]}`, no},
		{bin("equal", col("a"), col("b")), maybe},
	} {
		e, err := parseJSONPredicate(c.pred)
		if err != nil {
			t.Fatalf("%s: %v", c.pred, err)
		}
		if got := eval(e, eu, true); got != c.want {
			t.Errorf("%s: %d, want %d", c.pred, got, c.want)
		}
	}
	for _, bad := range []string{"", "{", `{"op":"and","children":[]}`, `{"op":"not"}`, `{"op":"column","name":"a"}`,
		bin("equal", col("a"), lit("x", "int")), bin("equal", col("a"), lit("1", "frob")), `{"op":"isNull","children":[` + lit("1", "int") + `]}`,
		`[1,2]`, strings.Repeat(`{"op":"not","children":[`, 50) + `{}` + strings.Repeat(`]}`, 50)} {
		if _, err := parseJSONPredicate(bad); err == nil {
			t.Errorf("parseJSONPredicate(%q) accepted", bad)
		}
	}
}

// TestCacheBound: the listing cache holds at most its entries and files.
func TestCacheBound(t *testing.T) {
	c := newListingCache(3)
	for i := range 10 {
		c.put(strconv.Itoa(i), &listing{files: make([]fileEntry, 1)})
	}
	if c.len() != 3 {
		t.Fatalf("%d entries, want 3", c.len())
	}
	if _, ok := c.get("9"); !ok {
		t.Fatal("newest evicted")
	}
	if _, ok := c.get("0"); ok {
		t.Fatal("oldest kept")
	}
	c = newListingCache(100)
	c.maxFiles = 10
	for i := range 5 {
		c.put(strconv.Itoa(i), &listing{files: make([]fileEntry, 4)})
	}
	if c.files > 10 || c.len() != 2 {
		t.Fatalf("%d files in %d entries, want <= 10 in 2", c.files, c.len())
	}
	c.put("big", &listing{files: make([]fileEntry, 11)})
	if _, ok := c.get("big"); ok {
		t.Fatal("a listing larger than the cache was cached")
	}
}

// TestListBounds: maxResults is capped and page tokens are bounded.
func TestListBounds(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/?maxResults=5000", nil)
	p, err := parseListPage(r, "shares")
	if err != nil || p.max != MaxMaxResults {
		t.Fatalf("max %d, %v", p.max, err)
	}
	long := encodeListToken("shares", strings.Repeat("a", maxPageToken))
	r = httptest.NewRequest(http.MethodGet, "/?pageToken="+long, nil)
	if _, err := parseListPage(r, "shares"); err == nil {
		t.Fatal("a page token longer than the bound was accepted")
	}
	items := make([]string, 5000)
	for i := range items {
		items[i] = strconv.Itoa(100000 + i)
	}
	out, next := page(items, func(s string) string { return s }, p)
	if len(out) != MaxMaxResults || next == "" {
		t.Fatalf("%d items, next %q", len(out), next)
	}
}

func TestCheckFormat(t *testing.T) {
	for caps, ok := range map[string]bool{"": true, "responseformat=parquet": true, "responseformat=delta,parquet": true,
		"ResponseFormat=PARQUET;readerfeatures=x": true, "responseformat=delta": false, "includeendstreamaction=true": true,
		"responseformat=": false} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Delta-Sharing-Capabilities", caps)
		if err := checkFormat(r); (err == nil) != ok {
			t.Errorf("%q: %v", caps, err)
		}
	}
}

// Fuzz tests: the parsers of what a recipient sends never panic and
// answer only protocol errors.

func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{"region = 'eu'", "a IN (1, 2) AND NOT b IS NULL", "(a < 1 OR b >= DATE '2020-01-01')", "\"x\" <> 'it''s'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseSQL(s)
		if err == nil {
			eval(e, file(map[string]pval{"a": {kind: 'n', n: 1}}, nil, nil, nil, 1), true)
		}
	})
}

func FuzzParseJSONPredicate(f *testing.F) {
	f.Add(`{"op":"and","children":[{"op":"isNull","children":[{"op":"column","name":"a"}]},{"op":"equal","children":[{"op":"column","name":"b","valueType":"int"},{"op":"literal","value":"1","valueType":"int"}]}]}`)
	f.Add(`{"op":"not","children":[{"op":"lessThan","children":[{"op":"literal","value":"x","valueType":"string"},{"op":"column","name":"c"}]}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseJSONPredicate(s)
		if err == nil {
			eval(e, file(map[string]pval{"b": {kind: 'n', n: 1}}, map[string]pval{"c": {kind: 's', s: "a"}}, map[string]pval{"c": {kind: 's', s: "z"}}, nil, 1), true)
		}
	})
}

func FuzzQueryRequest(f *testing.F) {
	f.Add(`{"predicateHints":["a = 1"],"limitHint":5,"version":3,"maxFiles":2,"pageToken":"abc"}`)
	f.Add(`{"jsonPredicateHints":"{}","timestamp":"2022-01-01T00:00:00Z"}`)
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseQueryRequest(strings.NewReader(s), 1<<16)
		if err != nil {
			if ae := toAPI(err); ae.status >= 500 {
				t.Fatalf("%q: %d", s, ae.status)
			}
		}
	})
}

func FuzzListParams(f *testing.F) {
	f.Add("maxResults=10&pageToken=" + encodeListToken("shares", "a"))
	f.Add("maxResults=-1")
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL.RawQuery = q
		p, err := parseListPage(r, "shares")
		if err != nil {
			if ae := toAPI(err); ae.status != 400 {
				t.Fatalf("%q: %d", q, ae.status)
			}
			return
		}
		if p.max < 0 || p.max > MaxMaxResults {
			t.Fatalf("%q: max %d", q, p.max)
		}
		page([]string{"a", "b", "c"}, func(s string) string { return s }, p)
	})
}

func FuzzTimestampAndToken(f *testing.F) {
	f.Add("2022-01-01T00:00:00Z", encodeQueryToken(queryPageToken{Version: 1, Offset: 2, Hash: "x"}))
	f.Fuzz(func(t *testing.T, ts, tok string) {
		if _, err := parseTimestamp(ts); err != nil && toAPI(err).status != 400 {
			t.Fatal(err)
		}
		_, _ = decodeQueryToken(tok)
		b, _ := json.Marshal(tok)
		_ = b
	})
}

func TestFilterColumns(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"region = 'EMEA'", []string{"region"}, true},
		{`REGION IN ('a', 'b') AND ("Day" >= 19000 OR region IS NULL)`, []string{"day", "region"}, true},
		{"NOT tier = 'internal'", []string{"tier"}, true},
		{"region = ", nil, false},
		{"region == 'x'", nil, false},
	} {
		got, err := FilterColumns(tc.in)
		if (err == nil) != tc.ok || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("FilterColumns(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
