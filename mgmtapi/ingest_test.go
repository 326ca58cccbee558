package mgmtapi_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
	"github.com/floe-lake/floe/objstore/bucket"
)

func init() {
	// The spec validator decodes these bodies as opaque text.
	for _, ct := range []string{"text/csv", "application/x-ndjson"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

const octet = "application/octet-stream"

// TestIngestEndpoints: a load creates (201) then appends (200); overwrite,
// micro-batches with and without wait, add-files and Delta registration
// work through the API; privileges are checked (CREATE_TABLE to create,
// then the creator owns the table; MODIFY to write); every call is audited.
func TestIngestEndpoints(t *testing.T) {
	e := newEnv(t)
	f := e.f
	e.ok(t, 200, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"sales"}})
	base := "/api/v1/tables/" + f.Warehouse + "/sales/"
	var res ingest.Result

	r := e.do(t, e.admin, "POST", base+"orders/ingest?format=csv&partition=truncate(10,id)", "id,amount\n1,9.5\n2,3\n", "Content-Type", "text/csv")
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	if !res.Created || res.Rows != 2 || res.Mode != "create" || res.SnapshotID == 0 {
		t.Fatalf("create: %+v", res)
	}
	r = e.do(t, e.admin, "POST", base+"orders/ingest?name=more.ndjson", `{"id":3,"amount":1}`+"\n", "Content-Type", octet)
	if r.Status != 200 {
		t.Fatalf("append: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	if res.Created || res.Rows != 1 || res.Mode != "append" || res.Format != "ndjson" {
		t.Fatalf("append: %+v", res)
	}
	// Bad input: 400, and nothing changes.
	r = e.do(t, e.admin, "POST", base+"orders/ingest?format=csv", "id,amount\nx,1\n", "Content-Type", octet)
	wantStatus(t, r, 400)
	if msg, _, _ := errorOf(t, r); !strings.Contains(msg, `request body line 2 (row 1), column "id": "x" is not a valid long`) {
		t.Errorf("bad input message %q", msg)
	}
	wantStatus(t, e.do(t, e.admin, "POST", base+"orders/ingest?mode=sideways", "id\n1\n", "Content-Type", octet), 400)
	wantStatus(t, e.do(t, e.admin, "POST", base+"nope/ingest?mode=append", "id\n1\n", "Content-Type", octet), 404)
	wantStatus(t, e.do(t, e.admin, "POST", base+"orders/ingest?mode=create", "id\n1\n", "Content-Type", octet), 409)

	// Micro-batches.
	var sr ingest.StreamResult
	r = e.do(t, e.admin, "POST", base+"orders/stream", `{"id":4,"amount":2}`+"\n", "Content-Type", "application/x-ndjson")
	if r.Status != 202 {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &sr)
	if sr.Accepted != 1 || sr.Committed {
		t.Fatalf("stream: %+v", sr)
	}
	r = e.do(t, e.admin, "POST", base+"orders/stream?wait=true", `{"id":5,"amount":2}`+"\n", "Content-Type", octet)
	if r.Status != 200 {
		t.Fatalf("stream wait: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &sr)
	if !sr.Committed || sr.SnapshotID == 0 {
		t.Fatalf("stream wait: %+v", sr)
	}
	if n := countRows(t, e, "orders"); n != 5 {
		t.Fatalf("%d rows after the micro-batches, want 5", n)
	}

	// Overwrite.
	r = e.do(t, e.admin, "POST", base+"orders/ingest?mode=overwrite&format=ndjson", `{"id":9,"amount":0.5}`+"\n", "Content-Type", octet)
	if r.Status != 200 {
		t.Fatalf("overwrite: %d %s", r.Status, r.Body)
	}
	if n := countRows(t, e, "orders"); n != 1 {
		t.Fatalf("%d rows after overwrite, want 1", n)
	}

	// add-files over files put inside the table's location, and
	// register-delta over files put in the warehouse storage.
	objs := f.App.Objects()
	put := func(key string, data []byte) {
		t.Helper()
		if _, err := objs.Put(t.Context(), f.Warehouse, key, bytes.NewReader(data), bucket.PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
	}
	pq := parquetOf(t, []int64{7, 8}, []float64{1.25, 2.5})
	ordersLoc := tableLocation(t, e, "orders")
	put(strings.TrimPrefix(ordersLoc, "s3://"+f.Warehouse+"/")+"/landing/x.parquet", pq)
	put("landing/x.parquet", pq)
	// Outside the table's location: refused, admins included.
	r = e.do(t, e.admin, "POST", base+"orders/add-files", map[string]any{"paths": []string{"s3://" + f.Warehouse + "/landing/"}})
	wantStatus(t, r, 400)
	if msg, _, _ := errorOf(t, r); !strings.Contains(msg, "s3://"+f.Warehouse+"/landing/") || !strings.Contains(msg, "outside the table location "+ordersLoc) {
		t.Errorf("add-files outside: %q", msg)
	}
	r = e.do(t, e.admin, "POST", base+"orders/add-files", map[string]any{"paths": []string{ordersLoc + "/landing/"}})
	if r.Status != 200 {
		t.Fatalf("add-files: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	if res.Files != 1 || res.Rows != 2 {
		t.Fatalf("add-files: %+v", res)
	}
	wantStatus(t, e.do(t, e.admin, "POST", base+"orders/add-files", map[string]any{"paths": []string{"s3://elsewhere/x.parquet"}}), 400)
	put("deltas/d1/part-0.parquet", pq)
	schema := `{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"amount\",\"type\":\"double\",\"nullable\":true,\"metadata\":{}}]}`
	put("deltas/d1/_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"a","format":{"provider":"parquet","options":{}},"schemaString":"`+schema+`","partitionColumns":[],"configuration":{}}}
{"add":{"path":"part-0.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`))
	r = e.do(t, e.admin, "POST", base+"from_delta/register-delta", map[string]any{"location": "s3://" + f.Warehouse + "/deltas/d1"})
	if r.Status != 201 {
		t.Fatalf("register-delta: %d %s", r.Status, r.Body)
	}
	if n := countRows(t, e, "from_delta"); n != 2 {
		t.Fatalf("%d rows in the Delta table, want 2", n)
	}

	// Privileges: bob may neither create nor write until granted.
	bob := f.PrincipalToken(t, "bob")
	r = e.do(t, bob, "POST", base+"bobs/ingest", "id\n1\n", "Content-Type", octet)
	wantError(t, r, 403, "ForbiddenException", `principal "bob" lacks CREATE_TABLE on namespace "sales"`)
	wantError(t, e.do(t, bob, "POST", base+"orders/ingest", "id,amount\n1,1\n", "Content-Type", octet), 403, "ForbiddenException",
		`principal "bob" lacks MODIFY on table "sales.orders"`)
	wantError(t, e.do(t, bob, "POST", base+"orders/stream", `{"id":1}`+"\n", "Content-Type", octet), 403, "ForbiddenException",
		`principal "bob" lacks MODIFY on table "sales.orders"`)
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "CREATE_TABLE", nsOn("sales")))
	if r = e.do(t, bob, "POST", base+"bobs/ingest", "id\n1\n", "Content-Type", octet); r.Status != 201 {
		t.Fatalf("bob creates: %d %s", r.Status, r.Body)
	}
	// The creator owns the table: it may append.
	if r = e.do(t, bob, "POST", base+"bobs/ingest", "id\n2\n", "Content-Type", octet); r.Status != 200 {
		t.Fatalf("bob appends to his table: %d %s", r.Status, r.Body)
	}
	// Attack: bob adds the files of a table he may not read (orders) to his
	// own table, by prefix or by file: refused, nothing committed.
	bobsLoc := tableLocation(t, e, "bobs")
	for _, p := range []string{"s3://" + f.Warehouse + "/sales/", ordersLoc + "/", ordersLoc + "/landing/x.parquet", "s3://" + f.Warehouse + "/"} {
		r = e.do(t, bob, "POST", base+"bobs/add-files", map[string]any{"paths": []string{p}})
		wantStatus(t, r, 400)
		if msg, typ, _ := errorOf(t, r); typ != "BadRequestException" || !strings.Contains(msg, p) || (p != "s3://"+f.Warehouse+"/" && !strings.Contains(msg, "outside the table location "+bobsLoc)) {
			t.Errorf("bob add-files %s: %q (%s)", p, msg, typ)
		}
	}
	if n := countRows(t, e, "bobs"); n != 2 {
		t.Fatalf("%d rows in bobs after the refused add-files, want 2", n)
	}

	// Audit: one event per call, with the outcome.
	recs, err := f.App.Store().AuditQuery(t.Context(), audit.Query{Action: "mgmt.table.*", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, rec := range recs {
		count[rec.Action+" "+rec.Outcome]++
	}
	for k, want := range map[string]int{"mgmt.table.ingest success": 5, "mgmt.table.ingest failure": 4, "mgmt.table.ingest denied": 2,
		"mgmt.table.stream success": 2, "mgmt.table.stream denied": 1, "mgmt.table.add_files success": 1, "mgmt.table.register_delta success": 1} {
		if count[k] != want {
			t.Errorf("audit %s: %d events, want %d (all: %v)", k, count[k], want, count)
		}
	}
}

// tableLocation returns the location of table sales.name.
func tableLocation(t *testing.T, e *env, name string) string {
	t.Helper()
	st, err := e.f.App.Catalog().LoadTable(t.Context(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return st.Metadata.Location()
}

func wantStatus(t *testing.T, r testkit.Response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d %s, want %d", r.Status, r.Body, want)
	}
}

// countRows scans a table of namespace sales in process.
func countRows(t *testing.T, e *env, table string) int64 {
	t.Helper()
	lk := lake.New(e.f.App.Catalog(), lake.NewBucketFS(e.f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(t.Context(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: table})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// parquetOf is a Parquet file of columns id (long) and amount (double).
func parquetOf(t *testing.T, ids []int64, amounts []float64) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(amounts, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
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
