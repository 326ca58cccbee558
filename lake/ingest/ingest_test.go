package ingest_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/ingest"
)

const peopleCSV = `id,name,score,active,born,seen
1,ann,1.5,true,2001-02-03,2026-03-01T10:00:00Z
2,bob,2,false,1999-12-31,2026-03-02T11:30:00Z
3,,3.25,true,,2026-03-03T00:00:00Z
`

// peopleRows is what peopleCSV reads back as (schema inferred).
var peopleRows = []string{
	"1|ann|1.5|true|2001-02-03|2026-03-01T10:00:00Z",
	"2|bob|2|false|1999-12-31|2026-03-02T11:30:00Z",
	"3|null|3.25|true|null|2026-03-03T00:00:00Z",
}

// peopleArrow is peopleCSV as an Arrow record in the inferred types.
func peopleArrow(t *testing.T) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "active", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "born", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[
		{"id":1,"name":"ann","score":1.5,"active":true,"born":"2001-02-03","seen":"2026-03-01T10:00:00Z"},
		{"id":2,"name":"bob","score":2,"active":false,"born":"1999-12-31","seen":"2026-03-02T11:30:00Z"},
		{"id":3,"name":null,"score":3.25,"active":true,"born":null,"seen":"2026-03-03T00:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func encodeParquet(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeArrow(t *testing.T, rec arrow.RecordBatch, stream bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	if stream {
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIngestFormats: each format creates a table with the inferred schema
// and the same rows, detected by name or by content.
func TestIngestFormats(t *testing.T) {
	e := newEnv(t)
	rec := peopleArrow(t)
	defer rec.Release()
	ndjson := `{"id":1,"name":"ann","score":1.5,"active":true,"born":"2001-02-03","seen":"2026-03-01T10:00:00Z"}
{"id":2,"name":"bob","score":2,"active":false,"born":"1999-12-31","seen":"2026-03-02T11:30:00Z"}
{"id":3,"score":3.25,"active":true,"born":null,"seen":"2026-03-03T00:00:00Z"}
`
	for _, tc := range []struct {
		name, file string
		format     ingest.Format
		data       []byte
	}{
		{"csv", "people.csv", ingest.CSV, []byte(peopleCSV)},
		{"csv_sniffed", "", ingest.CSV, []byte(peopleCSV)},
		{"tsv", "people.tsv", ingest.TSV, []byte(strings.ReplaceAll(peopleCSV, ",", "\t"))},
		{"ndjson", "people.jsonl", ingest.NDJSON, []byte(ndjson)},
		{"ndjson_sniffed", "", ingest.NDJSON, []byte(ndjson)},
		{"parquet", "", ingest.Parquet, encodeParquet(t, rec)},
		{"arrow_file", "", ingest.ArrowFile, encodeArrow(t, rec, false)},
		{"arrow_stream", "", ingest.ArrowStream, encodeArrow(t, rec, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.svc.Ingest(t.Context(), ingest.Request{Warehouse: wh, Table: ident(tc.name), Name: tc.file}, bytes.NewReader(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != tc.format || res.Mode != ingest.Create || !res.Created || res.Rows != 3 || res.Files != 1 || res.SnapshotID == 0 || res.Bytes <= 0 {
				t.Fatalf("result %+v", res)
			}
			tbl := e.load(t, tc.name)
			if got := rowsOf(t, tbl); !slices.Equal(got, peopleRows) {
				t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(peopleRows, "\n"))
			}
			want := "1: id: optional long, 2: name: optional string, 3: score: optional double, 4: active: optional boolean, 5: born: optional date, 6: seen: optional timestamptz"
			if got := fieldsOf(tbl.Schema()); got != want {
				t.Errorf("schema %s\nwant %s", got, want)
			}
		})
	}
}

func fieldsOf(sc *iceberg.Schema) string {
	var parts []string
	for _, f := range sc.Fields() {
		req := "optional"
		if f.Required {
			req = "required"
		}
		parts = append(parts, fmt.Sprintf("%d: %s: %s %s", f.ID, f.Name, req, f.Type))
	}
	return strings.Join(parts, ", ")
}

// TestIngestModes: auto creates then appends; overwrite replaces all rows
// in one snapshot; create on an existing table and append to a missing one
// fail; a given schema and a partition spec shape a new table.
func TestIngestModes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	sc, err := ingest.ParseSchema("id long not null, name string, seen timestamptz")
	if err != nil {
		t.Fatal(err)
	}
	csv1 := "id,name,seen\n1,a,2026-01-01T00:00:00Z\n2,b,2026-01-02T00:00:00Z\n"
	res, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("m"), Schema: sc, Partition: "day(seen), bucket(4, id)"}, strings.NewReader(csv1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Files != 2 {
		t.Fatalf("create: %+v", res)
	}
	tbl := e.load(t, "m")
	if got := fieldsOf(tbl.Schema()); got != "1: id: required long, 2: name: optional string, 3: seen: optional timestamptz" {
		t.Errorf("schema %s", got)
	}
	if got := tbl.Spec().String(); !strings.Contains(got, "seen_day") || !strings.Contains(got, "id_bucket_4") {
		t.Errorf("spec %s", got)
	}
	// Auto on an existing table appends; columns may come in another order and be missing.
	res, err = e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("m"), Format: ingest.NDJSON}, strings.NewReader(`{"name":"c","id":3}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != ingest.Append || res.Created || res.Rows != 1 {
		t.Fatalf("append: %+v", res)
	}
	if got := rowsOf(t, e.load(t, "m")); !slices.Equal(got, []string{"1|a|2026-01-01T00:00:00Z", "2|b|2026-01-02T00:00:00Z", "3|c|null"}) {
		t.Fatalf("after append: %v", got)
	}
	res, err = e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("m"), Mode: ingest.Overwrite}, strings.NewReader("id,name\n7,z\n"))
	if err != nil {
		t.Fatal(err)
	}
	after := e.load(t, "m")
	if got := rowsOf(t, after); !slices.Equal(got, []string{"7|z|null"}) {
		t.Fatalf("after overwrite: %v", got)
	}
	if after.CurrentSnapshot().Summary.Operation != "overwrite" || res.SnapshotID != after.CurrentSnapshot().SnapshotID {
		t.Errorf("overwrite snapshot %+v, result %+v", after.CurrentSnapshot().Summary, res)
	}
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("m"), Mode: ingest.Create}, strings.NewReader("id\n1\n")); floe.KindOf(err) != floe.AlreadyExists {
		t.Errorf("create on an existing table: %v", err)
	}
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("none"), Mode: ingest.Append}, strings.NewReader("id\n1\n")); floe.KindOf(err) != floe.NotFound {
		t.Errorf("append to a missing table: %v", err)
	}
}

// TestIngestBadInput: bad input fails with a clear Invalid error, commits
// nothing to an existing table and leaves no table behind on create.
func TestIngestBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("keep")}, strings.NewReader("id,name\n1,a\n")); err != nil {
		t.Fatal(err)
	}
	before := e.load(t, "keep").CurrentSnapshot().SnapshotID
	// Rows past the inference sample that do not parse.
	var late strings.Builder
	late.WriteString("id,name\n")
	for i := range 3000 {
		fmt.Fprintf(&late, "%d,n%d\n", i, i)
	}
	late.WriteString("oops,x\n")
	for _, tc := range []struct {
		name, table, input string
		format             ingest.Format
		mode               ingest.Mode
		want               string
	}{
		{"extra column", "keep", "id,name,zip\n1,a,3\n", "", ingest.Append, "the input has columns the table does not: zip"},
		{"bad value", "keep", "id,name\nx,a\n", "", ingest.Append, `line 2 (row 1), column "id": "x" is not a valid long`},
		{"late bad value", "keep", late.String(), "", ingest.Append, "oops"},
		{"late bad value on create", "fresh", late.String(), "", ingest.Create, "oops"},
		{"empty csv", "fresh", "", ingest.CSV, ingest.Create, "needs a header row"},
		{"json array", "fresh", `[{"a":1}]`, "", ingest.Create, "JSON array"},
		{"truncated parquet", "fresh", "PAR1 not really", "", ingest.Create, "cannot read the parquet input"},
		{"bad ndjson", "keep", "{\"id\":1}\n{\"id\":", ingest.NDJSON, ingest.Append, "request body line 2 (row 2): invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident(tc.table), Mode: tc.mode, Format: tc.format}, strings.NewReader(tc.input))
			if err == nil || floe.KindOf(err) != floe.Invalid || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Fatalf("error %v (kind %v), want Invalid containing %q", err, floe.KindOf(err), tc.want)
			}
			if tc.table == "fresh" && e.exists(t, "fresh") {
				t.Fatal("a failed create left the table behind")
			}
			if got := e.load(t, "keep").CurrentSnapshot().SnapshotID; got != before {
				t.Fatalf("a failed ingest committed snapshot %d", got)
			}
		})
	}
	if got := rowsOf(t, e.load(t, "keep")); !slices.Equal(got, []string{"1|a"}) {
		t.Fatalf("rows %v", got)
	}
}
