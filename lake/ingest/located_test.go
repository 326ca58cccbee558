package ingest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/ingest"
)

// TestIngestErrorsNameWhere: a CSV or NDJSON value that does not parse as
// its column's type, a row with the wrong number of fields and a line that
// is not JSON fail the ingest with an error naming the input (its file
// name, or "request body"), the line and row, and the column; and nothing
// is committed (the table keeps its snapshot, a table the ingest would
// create does not remain).
func TestIngestErrorsNameWhere(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("people"), Name: "people.csv"}, strings.NewReader(peopleCSV)); err != nil {
		t.Fatal(err)
	}
	before := e.load(t, "people").CurrentSnapshot().SnapshotID
	// Many good rows first, so that a bad one lies beyond the type sample.
	var many strings.Builder
	many.WriteString("id,name\n")
	for i := range 3000 {
		fmt.Fprintf(&many, "%d,n%d\n", i, i)
	}
	many.WriteString("3000x,late\n")
	// A trailing comma in an object beyond the sample made Arrow's JSON
	// decoder panic: the whole server went down.
	var comma strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&comma, `{"id":%d,"name":"n%d"}`+"\n", i, i)
	}
	comma.WriteString(`{"id":2,}` + "\n")
	for _, c := range []struct {
		name, table, file, format, in string
		want                          []string
	}{
		{name: "csv value not a long", table: "people", file: "people.csv", format: "csv",
			in:   "id,name\n7,gus\n8,hal\nnine,ida\n",
			want: []string{`people.csv line 4 (row 3), column "id": "nine" is not a valid long`}},
		{name: "csv bad date in the request body", table: "people", format: "csv",
			in:   "id,born\n1,2001-02-03\n2,03/02/2001\n",
			want: []string{`request body line 3 (row 2), column "born": "03/02/2001" is not a valid date`}},
		{name: "csv bad boolean", table: "people", file: "p.csv", format: "csv",
			in:   "id,active\n1,true\n2,maybe\n",
			want: []string{`p.csv line 3 (row 2), column "active": "maybe" is not a valid boolean`}},
		{name: "csv bad timestamp", table: "people", file: "p.csv", format: "csv",
			in:   "id,seen\n1,yesterday\n",
			want: []string{`p.csv line 2 (row 1), column "seen": "yesterday" is not a valid timestamptz`}},
		{name: "csv row with too many fields", table: "people", file: "p.csv", format: "csv",
			in:   "id,name\n1,a\n2,b,extra\n",
			want: []string{"p.csv line 3 (row 2)", "different number of fields than the header's 2"}},
		{name: "csv row with too few fields after a quoted line break", table: "people", file: "p.csv", format: "csv",
			in:   "id,name\n1,\"two\nlines\"\n2\n",
			want: []string{"p.csv line 4 (row 2)", "different number of fields"}},
		{name: "tsv bad value", table: "people", file: "p.tsv", format: "tsv",
			in:   "id\tscore\n1\t2.5\n2\thigh\n",
			want: []string{`p.tsv line 3 (row 2), column "score": "high" is not a valid double`}},
		{name: "csv bad value beyond the sample, new table", table: "fresh", file: "many.csv", format: "csv",
			in:   many.String(),
			want: []string{`many.csv line 3002 (row 3001), column "id": "3000x" is not a valid long`}},
		{name: "ndjson value not a long", table: "people", file: "p.ndjson", format: "ndjson",
			in:   `{"id":1,"name":"a"}` + "\n" + `{"id":"two","name":"b"}` + "\n",
			want: []string{`p.ndjson line 2 (row 2), column "id": "two" is not a valid long`}},
		{name: "ndjson bad JSON after a blank line", table: "people", file: "p.ndjson", format: "ndjson",
			in:   `{"id":1}` + "\n\n" + `{"id":2,}` + "\n",
			want: []string{"p.ndjson line 3 (row 2): invalid JSON"}},
		{name: "ndjson trailing comma beyond the sample", table: "people", file: "c.ndjson", format: "ndjson",
			in:   comma.String(),
			want: []string{"c.ndjson line 1501 (row 1501): invalid JSON"}},
		{name: "ndjson two objects on one line", table: "people", file: "p.ndjson", format: "ndjson",
			in:   `{"id":1}` + "\n" + `{"id":2} {"id":3}` + "\n",
			want: []string{"p.ndjson line 2 (row 2): invalid JSON"}},
		{name: "ndjson line not an object", table: "people", file: "p.ndjson", format: "ndjson",
			in:   `{"id":1}` + "\n" + `[2]` + "\n",
			want: []string{"p.ndjson line 2 (row 2): not a JSON object"}},
		{name: "ndjson bad timestamp in the request body", table: "people", format: "ndjson",
			in:   `{"id":1,"seen":"2026-03-01T10:00:00Z"}` + "\n" + `{"id":2,"seen":"soon"}`,
			want: []string{`request body line 2 (row 2), column "seen": "soon" is not a valid timestamptz`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident(c.table), Name: c.file, Format: ingest.Format(c.format)},
				strings.NewReader(c.in))
			if err == nil {
				t.Fatal("the ingest succeeded")
			}
			if floe.KindOf(err) != floe.Invalid {
				t.Errorf("kind %v, want invalid: %v", floe.KindOf(err), err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if got := e.load(t, "people").CurrentSnapshot().SnapshotID; got != before {
				t.Errorf("people has a new snapshot %d after a failed ingest", got)
			}
			if e.exists(t, "fresh") {
				t.Error("the failed ingest left the table it created")
			}
		})
	}
}

// TestNDJSONLineBound: an NDJSON line longer than MaxLineBytes fails with
// an error naming the line, instead of being buffered whole.
func TestNDJSONLineBound(t *testing.T) {
	long := `{"id":1,"name":"` + strings.Repeat("x", 4096) + `"}`
	in := `{"id":0,"name":"short"}` + "\n" + long + "\n"
	src, err := ingest.Open(t.Context(), strings.NewReader(in), ingest.ReadOptions{Format: ingest.NDJSON, Name: "big.ndjson", MaxLineBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows := int64(0)
	for src.Next() {
		rows += src.RecordBatch().NumRows()
	}
	err = src.Err()
	if err == nil || !strings.Contains(err.Error(), "big.ndjson line 2") || !strings.Contains(err.Error(), "longer than 1024 bytes") {
		t.Fatalf("err %v, want the line bound named", err)
	}
	// Under the bound, the same input reads.
	src2, err := ingest.Open(t.Context(), strings.NewReader(in), ingest.ReadOptions{Format: ingest.NDJSON, MaxLineBytes: len(long)})
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	rows = 0
	for src2.Next() {
		rows += src2.RecordBatch().NumRows()
	}
	if err := src2.Err(); err != nil || rows != 2 {
		t.Fatalf("%d rows, %v", rows, err)
	}
}

// TestIngestConvertErrorsNameRow: a value the reader read but that does
// not convert to the table's column (a long too large for an int, from
// Parquet), and a missing value of a required column, are reported with
// the input's name, the row and the column, and nothing is committed.
func TestIngestConvertErrorsNameRow(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	for _, c := range []struct{ table, schema string }{{"small", "id int, name string"}, {"req", "id long not null, name string"}} {
		sc, err := ingest.ParseSchema(c.schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident(c.table), Schema: sc, Format: ingest.CSV},
			strings.NewReader("id,name\n1,a\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[{"id":2},{"id":3},{"id":5000000000}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	pq := encodeParquet(t, rec)
	for _, c := range []struct {
		name, table, file string
		format            ingest.Format
		in                string
		want              string
	}{
		{"long too large for an int", "small", "big.parquet", ingest.Parquet, string(pq),
			`big.parquet row 3, column "id": "5000000000" cannot be converted to int`},
		{"required value missing", "req", "req.csv", ingest.CSV, "id,name\n2,b\n,c\n",
			`req.csv row 2, column "id": the column is required, but the value is missing`},
		{"required value missing in the request body", "req", "", ingest.NDJSON, `{"id":2}` + "\n" + `{"name":"x"}` + "\n",
			`request body row 2, column "id": the column is required`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.load(t, c.table).CurrentSnapshot().SnapshotID
			_, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident(c.table), Name: c.file, Format: c.format}, strings.NewReader(c.in))
			if err == nil || floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want Invalid containing %q", err, c.want)
			}
			if got := e.load(t, c.table).CurrentSnapshot().SnapshotID; got != before {
				t.Errorf("a failed ingest committed snapshot %d", got)
			}
		})
	}
}
