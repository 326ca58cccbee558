package ingest_test

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/ingest"
)

func TestParseSchema(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "id long not null, name string, ts timestamptz",
			want: "1: id: required long, 2: name: optional string, 3: ts: optional timestamptz"},
		{in: `"odd, name" int, price decimal(10, 2) null, tag fixed[16], b bool, d date, t time, u uuid, x binary, f float, g double, n timestamp_ns`,
			want: "1: odd, name: optional int, 2: price: optional decimal(10, 2), 3: tag: optional fixed[16], 4: b: optional boolean, 5: d: optional date, 6: t: optional time, 7: u: optional uuid, 8: x: optional binary, 9: f: optional float, 10: g: optional double, 11: n: optional timestamp_ns"},
		{in: "a BIGINT, b VARCHAR, c INTEGER", want: "1: a: optional long, 2: b: optional string, 3: c: optional int"},
		{in: `{"type":"struct","schema-id":0,"fields":[{"id":4,"name":"x","required":true,"type":"long"}]}`, want: "4: x: required long"},
		{in: "", err: "empty schema"},
		{in: "id", err: `want "name type"`},
		{in: "id long, id int", err: "appears twice"},
		{in: "id longer", err: `unknown type "longer"`},
		{in: "p decimal(40, 2)", err: "precision"},
		{in: "p decimal(3, 4)", err: "precision"},
		{in: "a int,, b int", err: "empty item"},
		{in: "a fixed[0]", err: "fixed[N]"},
		{in: `"a int`, err: "unterminated"},
		{in: "{not json", err: "not a JSON Iceberg schema"},
		{in: `{"type":"struct","fields":[]}`, err: "no fields"},
	} {
		sc, err := ingest.ParseSchema(tc.in)
		if tc.err != "" {
			if err == nil || floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSchema(%q) = %v, want Invalid error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSchema(%q): %v", tc.in, err)
			continue
		}
		if got := fieldsOf(sc); got != tc.want {
			t.Errorf("ParseSchema(%q) = %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestParsePartition(t *testing.T) {
	sc, err := ingest.ParseSchema("id long, name string, ts timestamptz, d date, region string")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "region", want: "1000: region: identity(5)"},
		{in: "day(ts), bucket(16, id)", want: "1000: ts_day: day(3), 1001: id_bucket_16: bucket[16](1)"},
		{in: "years(d), month(ts), hour(ts), truncate(4, name), identity(REGION)",
			want: "1000: d_year: year(4), 1001: ts_month: month(3), 1002: ts_hour: hour(3), 1003: name_trunc_4: truncate[4](2), 1004: region: identity(5)"},
		{in: "bucket[8](id), truncate[2](name)", want: "1000: id_bucket_8: bucket[8](1), 1001: name_trunc_2: truncate[2](2)"},
		{in: "day(nope)", err: `no column "nope"`},
		{in: "day(name)", err: "cannot apply"},
		{in: "bucket(id)", err: "takes a width and a column"},
		{in: "bucket(0, id)", err: "width"},
		{in: "bucket(x, id)", err: "width"},
		{in: "frobnicate(id)", err: "unknown transform"},
		{in: "day(ts), day(ts)", err: "repeats"},
		{in: "day(ts", err: "unbalanced"},
		{in: "region,", err: "empty item"},
	} {
		spec, err := ingest.ParsePartition(tc.in, sc)
		if tc.err != "" {
			if err == nil || floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePartition(%q) = %v, want Invalid error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePartition(%q): %v", tc.in, err)
			continue
		}
		if got := specString(spec); got != tc.want {
			t.Errorf("ParsePartition(%q) = %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func specString(spec iceberg.PartitionSpec) string {
	var parts []string
	for _, f := range spec.Fields() {
		parts = append(parts, strings.TrimSpace(f.String()))
	}
	return strings.Join(parts, ", ")
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]ingest.Format{"": "", "CSV": ingest.CSV, "jsonl": ingest.NDJSON, "feather": ingest.ArrowFile,
		"arrow-stream": ingest.ArrowStream, "parquet": ingest.Parquet, "tsv": ingest.TSV} {
		if got, err := ingest.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ingest.ParseFormat("xls"); floe.KindOf(err) != floe.Invalid {
		t.Errorf("ParseFormat(xls): %v", err)
	}
	for name, want := range map[string]ingest.Format{"a.CSV": ingest.CSV, "x/y.parquet": ingest.Parquet, "e.jsonl": ingest.NDJSON,
		"f.arrows": ingest.ArrowStream, "g.feather": ingest.ArrowFile, "h.txt": "", "noext": ""} {
		if got := ingest.FormatOfName(name); got != want {
			t.Errorf("FormatOfName(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzParseSchema: any text parses or fails with an Invalid error, never
// panics; a parsed schema has unique, positive field ids.
func FuzzParseSchema(f *testing.F) {
	for _, s := range []string{"id long not null, name string", `"a""b" decimal(3,1)`, "x fixed[4]", `{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"int"}]}`, "a int,,", "(((", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ingest.ParseSchema(s)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("ParseSchema(%q): %v is not Invalid", s, err)
			}
			return
		}
		ids := map[int]bool{}
		for _, fl := range sc.Fields() {
			if ids[fl.ID] {
				t.Fatalf("ParseSchema(%q): duplicate id %d", s, fl.ID)
			}
			ids[fl.ID] = true
		}
	})
}

// FuzzParsePartition: any text parses into a spec whose fields all apply
// to their source columns, or fails with an Invalid error.
func FuzzParsePartition(f *testing.F) {
	sc, err := ingest.ParseSchema("id long, name string, ts timestamptz, d date")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"day(ts), bucket(16, id)", "truncate[4](name)", "name", "hour(ts),", "bucket(-1, id)", "month(d), years(ts)", "void(id)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ingest.ParsePartition(s, sc)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("ParsePartition(%q): %v is not Invalid", s, err)
			}
			return
		}
		for _, pf := range spec.Fields() {
			src, ok := sc.FindFieldByID(pf.SourceIDs[0])
			if !ok || !pf.Transform.CanTransform(src.Type) {
				t.Fatalf("ParsePartition(%q): field %v does not apply to %v", s, pf, src)
			}
		}
	})
}
