package sharecat_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// locations through Floe's S3 endpoint
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/spectest"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/sharecat"
)

var rowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func rows(from, n int) arrow.Table {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rowSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(rowSchema, []arrow.RecordBatch{rec})
}

func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var out []int64
	for _, ch := range at.Column(0).Data().Chunks() {
		out = append(out, ch.(*array.Int64).Int64Values()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// sharedFloe starts Floe with a fake resolver and, through the main
// catalog as admin, two tables with two appends each (hr.payroll and
// hr.salaries) and an unshared one (hr.hidden). The share "sales" offers
// hr.payroll as emea.orders (history off) and hr.salaries as emea.pay
// (history on) to the recipient alice.
func sharedFloe(t testing.TB) (*testkit.Floe, *sharecat.FakeResolver, *rest.Catalog) {
	t.Helper()
	ctx := context.Background()
	res := sharecat.NewFakeResolver()
	f := testkit.Start(t, func(c *app.Config) { c.SharingResolver = res })
	admin, err := rest.NewCatalog(ctx, "floe", f.URL, rest.WithCredential(f.Cred.String()), rest.WithCustomTransport(f.ClientTransport))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateNamespace(ctx, table.Identifier{"hr"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	for _, name := range []string{"payroll", "salaries", "hidden"} {
		tbl, err := admin.CreateTable(ctx, table.Identifier{"hr", name}, sc)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			data := rows(i*10, 10)
			if tbl, err = tbl.AppendTable(ctx, data, 100, nil); err != nil {
				t.Fatalf("append: %v", err)
			}
			data.Release()
		}
	}
	res.AddRecipient("alice", "alice-token", time.Time{}, "sales")
	for _, o := range []struct {
		alias, real string
		history     bool
	}{{"orders", "payroll", false}, {"pay", "salaries", true}} {
		res.AddTable(sharing.Table{ID: "oid-" + o.alias, Share: "sales", Schema: "emea", Name: o.alias, Warehouse: f.Warehouse,
			Ident: catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: o.real}, History: o.history})
	}
	return f, res, admin
}

// specCheck validates the share catalog's answers against the Iceberg
// REST OpenAPI spec, at the paths the spec names (the catalog URI's path
// taken off).
type specCheck struct {
	t       testing.TB
	spec    *spectest.Spec
	checked atomic.Int64
}

func (c *specCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	_, resp, respBody, err := spectest.Exchange(http.DefaultTransport, req)
	if err != nil {
		return nil, err
	}
	uri, ok := strings.CutPrefix(req.URL.RequestURI(), "/shares/sales/iceberg")
	if !ok {
		return resp, nil // data files, through the S3 endpoint
	}
	if verr := c.spec.Validate(req.Context(), req.Method, uri, req.Header, nil, resp.StatusCode, resp.Header, respBody, false); verr != nil {
		c.t.Errorf("OpenAPI spec violation: %v", verr)
	}
	c.checked.Add(1)
	return resp, nil
}

func recipientCatalog(t *testing.T, f *testkit.Floe, credential string, rt ...http.RoundTripper) (*rest.Catalog, error) {
	t.Helper()
	opts := []rest.Option{rest.WithCredential(credential), rest.WithWarehouseLocation("sales")}
	for _, r := range rt {
		opts = append(opts, rest.WithCustomTransport(r))
	}
	return rest.NewCatalog(context.Background(), "share", f.URL+"/shares/sales/iceberg", opts...)
}

// TestEndToEndIcebergGo: with only the recipient's credential, iceberg-go
// lists the share, loads both tables under their aliases and reads their
// rows through Floe's S3 endpoint with the vended credential; the
// history-off table has one snapshot; writes are refused.
func TestEndToEndIcebergGo(t *testing.T) {
	ctx := context.Background()
	f, _, _ := sharedFloe(t)
	if _, err := recipientCatalog(t, f, "alice:wrong"); err == nil {
		t.Fatal("a wrong recipient token opened the catalog")
	}
	spec, err := spectest.Load()
	if err != nil {
		t.Fatal(err)
	}
	check := &specCheck{t: t, spec: spec}
	cat, err := recipientCatalog(t, f, "alice:alice-token", check)
	if err != nil {
		t.Fatalf("recipient catalog: %v", err)
	}
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "emea" {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	var names []string
	for id, err := range cat.ListTables(ctx, table.Identifier{"emea"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(id, "."))
	}
	if strings.Join(names, ",") != "emea.orders,emea.pay" {
		t.Fatalf("tables %v", names)
	}
	orders, err := cat.LoadTable(ctx, table.Identifier{"emea", "orders"})
	if err != nil {
		t.Fatalf("load orders: %v", err)
	}
	if got := scanIDs(t, orders); len(got) != 20 || got[0] != 0 || got[19] != 19 {
		t.Fatalf("orders rows %v", got)
	}
	if n := len(orders.Metadata().Snapshots()); n != 1 {
		t.Fatalf("history-off table has %d snapshots", n)
	}
	pay, err := cat.LoadTable(ctx, table.Identifier{"emea", "pay"})
	if err != nil {
		t.Fatalf("load pay: %v", err)
	}
	if n := len(pay.Metadata().Snapshots()); n != 2 || len(scanIDs(t, pay)) != 20 {
		t.Fatalf("history-on table: %d snapshots", n)
	}
	// Writes are refused: by iceberg-go itself, as /v1/config advertises
	// only reads, and by the server to a client that tries anyway.
	if err := cat.CreateNamespace(ctx, table.Identifier{"x"}, nil); err == nil {
		t.Fatal("create namespace succeeded")
	}
	if err := cat.DropTable(ctx, table.Identifier{"emea", "orders"}); err == nil {
		t.Fatal("drop table succeeded")
	}
	for _, w := range [][2]string{{"POST", "/sales/namespaces"}, {"DELETE", "/sales/namespaces/emea/tables/orders"},
		{"POST", "/sales/namespaces/emea/tables/pay"}} {
		r := f.DoAs(t, "alice-token", w[0], "/shares/sales/iceberg/v1"+w[1], `{}`)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "share catalogs are read-only") {
			t.Fatalf("%s %s: %d %s", w[0], w[1], r.Status, r.Body)
		}
	}
	data := rows(100, 1)
	defer data.Release()
	if _, err := pay.AppendTable(ctx, data, 10, nil); err == nil {
		t.Fatal("append through the share catalog succeeded")
	}
	// The real names are not there.
	if _, err := cat.LoadTable(ctx, table.Identifier{"hr", "payroll"}); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("real name: %v", err)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"emea", "hidden"}); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("unshared table: %v", err)
	}
	// The admin's rows are intact.
	if got := scanIDs(t, pay); len(got) != 20 {
		t.Fatalf("pay has %d rows after refused writes", len(got))
	}
	if n := check.checked.Load(); n < 6 {
		t.Fatalf("only %d exchanges validated against the spec", n)
	}
}

// TestEndToEndCredentialScope: the credential vended with a shared table
// reads that table's files through Floe's S3 endpoint, and nothing of the
// unshared table next to it, and writes nothing; the vend and the request
// are audited for the recipient.
func TestEndToEndCredentialScope(t *testing.T) {
	ctx := context.Background()
	f, _, admin := sharedFloe(t)
	cat, err := recipientCatalog(t, f, "alice:alice-token")
	if err != nil {
		t.Fatal(err)
	}
	orders, err := cat.LoadTable(ctx, table.Identifier{"emea", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := admin.LoadTable(ctx, table.Identifier{"hr", "hidden"})
	if err != nil {
		t.Fatal(err)
	}
	// The credential, as the share catalog vended it.
	resp := f.DoAs(t, "alice-token", "GET", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/orders/credentials", nil)
	var out struct {
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	resp.JSON(t, &out)
	if resp.Status != 200 || len(out.StorageCredentials) != 1 {
		t.Fatalf("credentials: %d %s", resp.Status, resp.Body)
	}
	c := out.StorageCredentials[0].Config
	cli := s3.New(s3.Options{BaseEndpoint: aws.String(f.App.S3URL()), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	key := func(loc string) string { return strings.TrimPrefix(loc, "s3://"+f.Warehouse+"/") }
	get := func(loc string) error {
		o, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key(loc))})
		if err == nil {
			_, _ = io.Copy(io.Discard, o.Body)
			o.Body.Close()
		}
		return err
	}
	dataFile := func(tbl *table.Table) string {
		t.Helper()
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil || len(tasks) == 0 {
			t.Fatalf("plan: %v", err)
		}
		return tasks[0].File.FilePath()
	}
	if err := get(dataFile(orders)); err != nil {
		t.Fatalf("read a shared data file: %v", err)
	}
	if err := get(dataFile(hidden)); err == nil {
		t.Fatal("the recipient's credential read a file of an unshared table")
	}
	if err := get(hidden.MetadataLocation()); err == nil {
		t.Fatal("the recipient's credential read the metadata of an unshared table")
	}
	_, err = cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key(orders.Location()) + "/data/evil.parquet"),
		Body: strings.NewReader("x")})
	if err == nil {
		t.Fatal("the recipient's credential wrote into the shared table")
	}
	// History off: the credential reads by key only. Listing the table's
	// prefix would find the files of older snapshots, whose metadata the
	// recipient is not given.
	list := func(cli *s3.Client, loc string) error {
		_, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(f.Warehouse), Prefix: aws.String(key(loc) + "/")})
		return err
	}
	if err := list(cli, orders.Location()); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("the credential of a history-off table listed its prefix: %v", err)
	}
	// History on: the whole history is the recipient's, listing included.
	pay, err := cat.LoadTable(ctx, table.Identifier{"emea", "pay"})
	if err != nil {
		t.Fatal(err)
	}
	resp = f.DoAs(t, "alice-token", "GET", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/pay/credentials", nil)
	resp.JSON(t, &out)
	if resp.Status != 200 || len(out.StorageCredentials) != 1 {
		t.Fatalf("credentials: %d %s", resp.Status, resp.Body)
	}
	pc := out.StorageCredentials[0].Config
	payCli := s3.New(s3.Options{BaseEndpoint: aws.String(f.App.S3URL()), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(pc["s3.access-key-id"], pc["s3.secret-access-key"], pc["s3.session-token"])})
	if err := list(payCli, pay.Location()); err != nil {
		t.Fatalf("the credential of a history-on table cannot list its prefix: %v", err)
	}
	// Audit: the vend and the loadTable, for the recipient with its token id.
	var vend, load bool
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !(vend && load) {
		recs, err := f.App.Store().AuditRecords(ctx, 0, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Principal != "recipient:alice" || !strings.Contains(string(r.Detail), `"token_id":"tid-alice"`) {
				continue
			}
			vend = vend || (r.Action == "storage.credentials.vend" && r.Resource == "table:sales.emea.orders")
			load = load || (r.Action == "share.catalog.loadTable" && r.Resource == "share:sales/emea.orders")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !vend || !load {
		t.Fatalf("audit: vend %v, loadTable %v", vend, load)
	}
}

// TestEndToEndNotMounted: without a resolver, /shares/ is not served.
func TestEndToEndNotMounted(t *testing.T) {
	f := testkit.Start(t)
	resp := f.DoAs(t, "anything", "GET", "/shares/sales/iceberg/v1/config", nil)
	if resp.Status == http.StatusOK {
		t.Fatalf("share catalog served without a resolver: %s", resp.Body)
	}
}
