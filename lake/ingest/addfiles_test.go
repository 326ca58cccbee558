package ingest_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
	"github.com/floe-lake/floe/objstore/bucket"
)

// put stores data at s3://floe/<key>.
func (e *env) put(t *testing.T, key string, data []byte) string {
	t.Helper()
	if _, err := e.objs.Put(t.Context(), wh, key, bytes.NewReader(data), bucket.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	return "s3://" + wh + "/" + key
}

// idsParquet is a Parquet file of columns id (long) and name (string).
func idsParquet(t *testing.T, ids ...int64) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return encodeParquet(t, rec)
}

// TestAddFiles: Parquet files already inside the table's location join
// the table without a rewrite (by path and by prefix); incompatible,
// duplicate and outside files (another table's, or anywhere else in the
// warehouse) are refused and nothing is committed.
func TestAddFiles(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("t")}, strings.NewReader("id,name\n1,n1\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Ingest(ctx, ingest.Request{Warehouse: wh, Table: ident("other")}, strings.NewReader("id,name\n7,secret\n")); err != nil {
		t.Fatal(err)
	}
	loc := e.load(t, "t").Location()
	landing := strings.TrimPrefix(loc, "s3://"+wh+"/") + "/landing"
	one := e.put(t, landing+"/a/one.parquet", idsParquet(t, 10, 11))
	e.put(t, landing+"/b/two.parquet", idsParquet(t, 20))
	e.put(t, landing+"/b/sub/three.parquet", idsParquet(t, 30))
	e.put(t, landing+"/b/_tmp/skip.parquet", idsParquet(t, 99))
	e.put(t, landing+"/b/notes.txt", []byte("x"))
	res, err := e.svc.AddFiles(ctx, ingest.AddFilesRequest{Warehouse: wh, Table: ident("t"), Paths: []string{one, loc + "/landing/b/"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 3 || res.Rows != 4 || res.SnapshotID == 0 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"10|n10", "11|n11", "1|n1", "20|n20", "30|n30"}
	if got := rowsOf(t, e.load(t, "t")); !slices.Equal(got, want) {
		t.Fatalf("rows %v", got)
	}
	// The files were not copied: the table references them where they are.
	files := 0
	for _, task := range must(e.load(t, "t").Scan().PlanFiles(ctx)) {
		if strings.HasPrefix(task.File.FilePath(), loc+"/landing/") {
			files++
		}
	}
	if files != 3 {
		t.Errorf("%d data files reference landing/, want 3", files)
	}
	before := e.load(t, "t").CurrentSnapshot().SnapshotID
	bad := e.put(t, landing+"/c/bad.parquet", encodeParquet(t, peopleArrow(t)))
	outside := e.put(t, "landing/x.parquet", idsParquet(t, 40))
	otherTbl := e.load(t, "other")
	otherFile := must(lake.CurrentDataFiles(ctx, otherTbl))[0].FilePath()
	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{[]string{one}, []string{"already a data file"}},
		{[]string{bad}, []string{"cannot add"}},
		{[]string{"s3://elsewhere/x.parquet"}, []string{"outside the warehouse"}},
		{[]string{"s3://floe/landing/../../etc/x.parquet"}, []string{`".."`}},
		{[]string{loc + "/landing/../../other/x.parquet"}, []string{`".."`}},
		{[]string{loc + "/landing/b/notes.txt"}, []string{"not a .parquet file"}},
		{[]string{loc + "/empty/"}, []string{"no .parquet files"}},
		{nil, []string{"no files"}},
		// Attacks: files outside the table's own location.
		{[]string{outside}, []string{outside, "outside the table location " + loc}},
		{[]string{"s3://floe/landing/"}, []string{"s3://floe/landing/", "outside the table location " + loc}},
		{[]string{otherFile}, []string{otherFile, "outside the table location " + loc}},
		{[]string{otherTbl.Location() + "/"}, []string{otherTbl.Location(), "outside the table location " + loc}},
		{[]string{"s3://floe/"}, []string{"outside"}},
	} {
		_, err := e.svc.AddFiles(ctx, ingest.AddFilesRequest{Warehouse: wh, Table: ident("t"), Paths: tc.paths})
		if floe.KindOf(err) != floe.Invalid {
			t.Errorf("AddFiles(%v) = %v, want Invalid", tc.paths, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("AddFiles(%v) = %v, want it to contain %q", tc.paths, err, w)
			}
		}
	}
	if got := e.load(t, "t").CurrentSnapshot().SnapshotID; got != before {
		t.Errorf("a refused add-files committed snapshot %d", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

const deltaSchemaString = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}%s]}`

// TestRegisterDelta: a Delta table's active files (adds minus removes over
// JSON commits) become an Iceberg table at the same location, with its
// schema; partition columns become identity partitions with per-file
// values; unsupported logs are refused.
func TestRegisterDelta(t *testing.T) {
	e := newEnv(t)
	// Registering a Delta table lays a table over files that already exist:
	// an administrator's operation (see TestRegisterDeltaNeedsAdmin).
	ctx := catalog.WithClaimant(t.Context(), catalog.Claimant{Principal: "admin", Admin: true})
	e.put(t, "delta/plain/part-0.parquet", idsParquet(t, 1, 2))
	e.put(t, "delta/plain/part-1.parquet", idsParquet(t, 3))
	e.put(t, "delta/plain/part-2.parquet", idsParquet(t, 4, 5))
	e.put(t, "delta/plain/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"`+strings.ReplaceAll(fmt.Sprintf(deltaSchemaString, ""), `"`, `\"`)+`","partitionColumns":[],"configuration":{},"createdTime":1}}
{"add":{"path":"part-0.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"add":{"path":"part-1.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`))
	e.put(t, "delta/plain/_delta_log/00000000000000000001.json", []byte(`{"remove":{"path":"part-1.parquet","dataChange":true}}
{"add":{"path":"part-2.parquet","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}
`))
	res, err := e.svc.RegisterDelta(ctx, ingest.DeltaRequest{Warehouse: wh, Table: ident("plain"), Location: "s3://floe/delta/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.Rows != 4 || !res.Created {
		t.Fatalf("result %+v", res)
	}
	tbl := e.load(t, "plain")
	if tbl.Location() != "s3://floe/delta/plain" || tbl.Properties()["floe.source.delta-version"] != "1" {
		t.Errorf("location %s, properties %v", tbl.Location(), tbl.Properties())
	}
	if got := rowsOf(t, tbl); !slices.Equal(got, []string{"1|n1", "2|n2", "4|n4", "5|n5"}) {
		t.Fatalf("rows %v", got)
	}

	// Partitioned by region: the files lack the column.
	e.put(t, "delta/parts/region=eu/p0.parquet", idsParquet(t, 1))
	e.put(t, "delta/parts/region=us%20east/p1.parquet", idsParquet(t, 2, 3))
	schema := strings.ReplaceAll(fmt.Sprintf(deltaSchemaString, `,{"name":"region","type":"string","nullable":true,"metadata":{}}`), `"`, `\"`)
	e.put(t, "delta/parts/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"y","format":{"provider":"parquet","options":{}},"schemaString":"`+schema+`","partitionColumns":["region"],"configuration":{},"createdTime":1}}
{"add":{"path":"region=eu/p0.parquet","partitionValues":{"region":"eu"},"size":1,"modificationTime":1,"dataChange":true}}
{"add":{"path":"region=us%2520east/p1.parquet","partitionValues":{"region":"us east"},"size":1,"modificationTime":1,"dataChange":true}}
`))
	if _, err := e.svc.RegisterDelta(ctx, ingest.DeltaRequest{Warehouse: wh, Table: ident("parts"), Location: "s3://floe/delta/parts/"}); err != nil {
		t.Fatal(err)
	}
	parts := e.load(t, "parts")
	got := map[string]any{}
	for _, task := range must(parts.Scan().PlanFiles(ctx)) {
		for _, v := range task.File.Partition() {
			got[task.File.FilePath()] = v
		}
	}
	want := map[string]any{"s3://floe/delta/parts/region=eu/p0.parquet": "eu", "s3://floe/delta/parts/region=us%20east/p1.parquet": "us east"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("partition values %v, want %v", got, want)
	}

	// Refused logs; nothing is left behind.
	e.put(t, "delta/dv/x.parquet", idsParquet(t, 1))
	e.put(t, "delta/dv/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}
{"metaData":{"id":"z","format":{"provider":"parquet","options":{}},"schemaString":"`+strings.ReplaceAll(fmt.Sprintf(deltaSchemaString, ""), `"`, `\"`)+`","partitionColumns":[],"configuration":{}}}
`))
	// An absolute add path outside the Delta table: another table's file.
	foreign := must(lake.CurrentDataFiles(ctx, e.load(t, "plain")))[0].FilePath()
	e.put(t, "delta/steal/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"s","format":{"provider":"parquet","options":{}},"schemaString":"`+strings.ReplaceAll(fmt.Sprintf(deltaSchemaString, ""), `"`, `\"`)+`","partitionColumns":[],"configuration":{},"createdTime":1}}
{"add":{"path":"`+foreign+`","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`))
	e.put(t, "delta/ckpt/_delta_log/00000000000000000010.checkpoint.parquet", []byte("x"))
	e.put(t, "delta/ckpt/_delta_log/00000000000000000011.json", []byte("{}\n"))
	for _, tc := range []struct {
		loc  string
		kind floe.Kind
		want string
	}{
		{"s3://floe/delta/dv", floe.Unsupported, "deletionVectors"},
		{"s3://floe/delta/ckpt", floe.Unsupported, "checkpoint"},
		{"s3://floe/delta/none", floe.Invalid, "no Delta log"},
		{"s3://other/delta/plain", floe.Invalid, "outside the warehouse"},
		{"s3://floe/delta/steal", floe.Invalid, "outside the table location s3://floe/delta/steal"},
	} {
		_, err := e.svc.RegisterDelta(ctx, ingest.DeltaRequest{Warehouse: wh, Table: ident("refused"), Location: tc.loc})
		if floe.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RegisterDelta(%s) = %v, want %v containing %q", tc.loc, err, tc.kind, tc.want)
		}
		if e.exists(t, "refused") {
			t.Fatalf("RegisterDelta(%s) left a table behind", tc.loc)
		}
	}
}

// TestRegisterDeltaNeedsAdmin: a principal that is not an administrator
// cannot register a Delta table over files it did not write.
func TestRegisterDeltaNeedsAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := catalog.WithClaimant(t.Context(), catalog.Claimant{Principal: "bob"})
	e.put(t, "delta/other/part-0.parquet", idsParquet(t, 1, 2))
	e.put(t, "delta/other/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"`+strings.ReplaceAll(fmt.Sprintf(deltaSchemaString, ""), `"`, `\"`)+`","partitionColumns":[],"configuration":{},"createdTime":1}}
{"add":{"path":"part-0.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`))
	_, err := e.svc.RegisterDelta(ctx, ingest.DeltaRequest{Warehouse: wh, Table: ident("other"), Location: "s3://floe/delta/other"})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("register-delta by a non-admin over existing files = %v, want refused (not empty)", err)
	}
}
