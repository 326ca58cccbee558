package deltasharing_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// fakeResolver is an in-memory sharing.Resolver: one recipient per token,
// shares granted to recipients, tables per share.
type fakeResolver struct {
	mu      sync.Mutex
	tokens  map[string]sharing.Recipient
	grants  map[string][]string // recipient name -> share names
	tables  map[string][]sharing.Table
	revoked atomic.Bool
	calls   atomic.Int64
}

func newFake() *fakeResolver {
	return &fakeResolver{tokens: map[string]sharing.Recipient{}, grants: map[string][]string{}, tables: map[string][]sharing.Table{}}
}

func (f *fakeResolver) Authenticate(_ context.Context, token string, _ netip.Addr) (sharing.Recipient, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.tokens[token]
	if !ok {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "recipient", "invalid bearer token")
	}
	return r, nil
}

func (f *fakeResolver) granted(r sharing.Recipient, share string) bool {
	for _, s := range f.grants[r.Name] {
		if strings.EqualFold(s, share) {
			return true
		}
	}
	return false
}

func (f *fakeResolver) Shares(_ context.Context, r sharing.Recipient) ([]sharing.Share, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sharing.Share
	for _, s := range f.grants[r.Name] {
		out = append(out, sharing.Share{ID: "id-" + s, Name: s})
	}
	return out, nil
}

func (f *fakeResolver) Tables(_ context.Context, r sharing.Recipient, share string) ([]sharing.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.granted(r, share) {
		return nil, floe.E(floe.NotFound, "share", "share %s does not exist", share)
	}
	return append([]sharing.Table(nil), f.tables[strings.ToLower(share)]...), nil
}

func (f *fakeResolver) Table(ctx context.Context, r sharing.Recipient, share, schema, name string) (sharing.Table, error) {
	ts, err := f.Tables(ctx, r, share)
	if err != nil {
		return sharing.Table{}, err
	}
	for _, t := range ts {
		if strings.EqualFold(t.Schema, schema) && strings.EqualFold(t.Name, name) {
			return t, nil
		}
	}
	return sharing.Table{}, floe.E(floe.NotFound, "table", "table %s.%s.%s does not exist", share, schema, name)
}

func (f *fakeResolver) Revoked(context.Context, sharing.Recipient) (bool, error) {
	return f.revoked.Load(), nil
}

// env is a running Floe with a Delta Sharing server over a fake resolver,
// and a table crm.orders identity-partitioned by region.
type env struct {
	f    *testkit.Floe
	res  *fakeResolver
	lk   *lake.Lake
	base string // the Delta Sharing endpoint
}

const (
	tokenAlice = "alice-token"
	tokenBob   = "bob-token"
	realNS     = "crm"
)

func newEnv(t testing.TB, opts ...testkit.Option) *env {
	t.Helper()
	res := newFake()
	res.tokens[tokenAlice] = sharing.Recipient{ID: "r-alice", Name: "alice", TokenID: "tok-alice-1"}
	res.tokens[tokenBob] = sharing.Recipient{ID: "r-bob", Name: "bob", TokenID: "tok-bob-1"}
	res.grants["alice"] = []string{"sales"}
	opts = append([]testkit.Option{func(c *app.Config) { c.SharingResolver = res }}, opts...)
	f := testkit.Start(t, opts...)
	e := &env{f: f, res: res, lk: lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{}),
		base: f.URL + "/delta-sharing"}
	if err := f.App.Catalog().CreateNamespace(t.Context(), f.Warehouse, catalog.Namespace{realNS}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// share adds a table of the real namespace to share "sales" as
// schema.name, with history and a partition filter.
func (e *env) share(schema, name, real string, history bool, filter string) {
	e.res.mu.Lock()
	defer e.res.mu.Unlock()
	e.res.tables["sales"] = append(e.res.tables["sales"], sharing.Table{ID: "obj-" + name, Share: "sales", Schema: schema, Name: name,
		Warehouse: e.f.Warehouse, Ident: catalog.Ident{Namespace: catalog.Namespace{realNS}, Name: real}, History: history,
		PartitionFilter: filter})
}

var ordersSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 4, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
)

// createOrders creates an orders table partitioned by identity(region).
func (e *env) createOrders(t testing.TB, name string, props map[string]string) *table.Table {
	t.Helper()
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"})
	if _, err := e.f.App.Catalog().CreateTable(t.Context(), e.f.Warehouse, catalog.Namespace{realNS},
		catalog.CreateTableRequest{Name: name, Schema: ordersSchema, Spec: &spec, Properties: props}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(t.Context(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{realNS}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

var regions = []string{"eu", "us", "apac"}

// appendOrders appends ids [from, to), region by id mod 3.
func (e *env) appendOrders(t *testing.T, tbl *table.Table, from, to int64) *table.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(regions[i%3])
		b.Field(2).(*array.Float64Builder).Append(float64(i) * 1.5)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(time.Duration(i) * time.Hour).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tab := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer tab.Release()
	tbl, err = lake.AppendTable(t.Context(), tbl, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// resp is an HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) errorCode(t *testing.T) (string, string) {
	t.Helper()
	var m struct{ ErrorCode, Message string }
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return m.ErrorCode, m.Message
}

// lines splits an NDJSON body into objects.
func (r resp) lines(t *testing.T) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if len(m) != 1 {
			t.Fatalf("line %q has %d keys, want 1", sc.Text(), len(m))
		}
		out = append(out, m)
	}
	return out
}

func (e *env) do(t *testing.T, token, method, path string, body any, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// fileLine is a query's file line.
type fileLine struct {
	URL                 string             `json:"url"`
	ID                  string             `json:"id"`
	PartitionValues     map[string]*string `json:"partitionValues"`
	Size                int64              `json:"size"`
	Stats               string             `json:"stats"`
	ExpirationTimestamp int64              `json:"expirationTimestamp"`
}

// query posts a query and returns its metaData and files.
func (e *env) query(t *testing.T, token, table string, body any, hdr ...string) (resp, map[string]any, []fileLine) {
	t.Helper()
	r := e.do(t, token, http.MethodPost, "/shares/sales/schemas/"+table+"/query", body, hdr...)
	if r.status != 200 {
		return r, nil, nil
	}
	lines := r.lines(t)
	if len(lines) < 2 {
		t.Fatalf("query answered %d lines", len(lines))
	}
	if string(lines[0]["protocol"]) != `{"minReaderVersion":1}` {
		t.Fatalf("first line %v", lines[0])
	}
	var md map[string]any
	if err := json.Unmarshal(lines[1]["metaData"], &md); err != nil {
		t.Fatal(err)
	}
	var files []fileLine
	for _, l := range lines[2:] {
		raw, ok := l["file"]
		if !ok {
			continue
		}
		var fl fileLine
		if err := json.Unmarshal(raw, &fl); err != nil {
			t.Fatal(err)
		}
		files = append(files, fl)
	}
	return r, md, files
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func must(t *testing.T, r resp, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

var _ = fmt.Sprint

// deleteRows deletes the rows where col = v (position deletes on a
// merge-on-read table).
func deleteRows(t *testing.T, tbl *table.Table, col string, v int64) {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference(col), v), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// direct is a Handler over e's Floe, called without a listener.
type direct struct{ h http.Handler }

func newHandlerOn(t *testing.T, e *env, maxFiles int) direct {
	t.Helper()
	return direct{deltasharing.New(deltasharing.Options{Resolver: e.res, Tables: e.f.App.Catalog(),
		FS: lake.NewBucketFS(e.f.App.Objects()), Minter: e.f.App.Minter(), Endpoint: e.f.App.S3URL, PathStyle: true,
		Region: "us-east-1", MaxFiles: maxFiles})}
}

func (d direct) query(t *testing.T, token, path, body string) resp {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, deltasharing.Prefix+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	d.h.ServeHTTP(w, req)
	return resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}
