package sharecat_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sharing"
)

// recipientS3 returns an S3 client with the credential the share catalog
// vends for a table, and the loadTable answer's metadata location.
func recipientS3(t *testing.T, f *testkit.Floe, token, tablePath string) (*s3.Client, string) {
	t.Helper()
	resp := f.DoAs(t, token, "GET", "/shares/sales/iceberg/v1/sales/namespaces/"+tablePath, nil)
	var out struct {
		MetadataLocation string            `json:"metadata-location"`
		Config           map[string]string `json:"config"`
	}
	resp.JSON(t, &out)
	if resp.Status != 200 {
		t.Fatalf("load %s: %d %s", tablePath, resp.Status, resp.Body)
	}
	c := out.Config
	return s3.New(s3.Options{BaseEndpoint: aws.String(f.App.S3URL()), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])}), out.MetadataLocation
}

// s3Get reads the object at an s3:// location with cli.
func s3Get(ctx context.Context, cli *s3.Client, loc string) error {
	b, k, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	o, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
	if err == nil {
		_, _ = io.Copy(io.Discard, o.Body)
		o.Body.Close()
	}
	return err
}

// liveAndAll returns the data files of tbl's current snapshot, and every
// file path its manifests name (deleted entries included).
func liveAndAll(t *testing.T, tbl *table.Table) (live, named []string) {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for e, err := range m.Entries(fsys, false) {
			if err != nil {
				t.Fatal(err)
			}
			named = append(named, e.DataFile().FilePath())
			if e.Status() != iceberg.EntryStatusDELETED {
				live = append(live, e.DataFile().FilePath())
			}
		}
	}
	return live, named
}

// TestEndToEndHistoryOffHidesTheRest: a table shared without history must
// not hand its recipient the keys of any file outside the current
// snapshot. Before the derived views, the recipient was given the real
// metadata file's location (all snapshots in it) and the real manifests,
// which name the files a DELETE removed, and its credential read every key
// under the table's location: the deleted rows were one GET away.
func TestEndToEndHistoryOffHidesTheRest(t *testing.T) {
	ctx := context.Background()
	f, _, admin := sharedFloe(t)
	payroll, err := admin.LoadTable(ctx, table.Identifier{"hr", "payroll"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := liveAndAll(t, payroll)
	// The provider deletes rows 0-9: a whole file goes (a deleted entry).
	if payroll, err = payroll.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(10)), nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	live, named := liveAndAll(t, payroll)
	var gone []string
	for _, p := range before {
		if !slices.Contains(live, p) {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 || !slices.Contains(named, gone[0]) {
		t.Fatalf("the delete left no deleted entry to test with: before %v, live %v, named %v", before, live, named)
	}

	cat, err := recipientCatalog(t, f, "alice:alice-token")
	if err != nil {
		t.Fatal(err)
	}
	orders, err := cat.LoadTable(ctx, table.Identifier{"emea", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, orders); len(got) != 10 || got[0] != 10 {
		t.Fatalf("recipient rows %v", got)
	}
	// Nothing the recipient is served names the deleted file or an older
	// snapshot.
	if orders.MetadataLocation() == payroll.MetadataLocation() {
		t.Fatal("the recipient was given the real metadata file")
	}
	_, servedNames := liveAndAll(t, orders)
	for _, p := range servedNames {
		if slices.Contains(gone, p) {
			t.Fatalf("the served manifests name the deleted file %s", p)
		}
	}
	cli, _ := recipientS3(t, f, "alice-token", "emea/tables/orders")
	// And its credential reads none of the provider's own metadata or the
	// deleted file, even by its exact key.
	for what, loc := range map[string]string{
		"the real metadata file": payroll.MetadataLocation(),
		"the real manifest list": payroll.CurrentSnapshot().ManifestList,
		"the deleted data file":  gone[0],
	} {
		if err := s3Get(ctx, cli, loc); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("the recipient's credential read %s (%s): %v", what, loc, err)
		}
	}
	for _, p := range live {
		if err := s3Get(ctx, cli, p); err != nil {
			t.Errorf("the recipient's credential cannot read a live file %s: %v", p, err)
		}
	}
	// The view's own files are readable (the scan above read them).
	if err := s3Get(ctx, cli, orders.CurrentSnapshot().ManifestList); err != nil {
		t.Errorf("the served manifest list: %v", err)
	}
}

// TestEndToEndPartitionFilter: a table shared with a partition filter is
// served through the share catalog as a derived snapshot of the allowed
// partitions: the recipient's scan returns only their rows, the metadata
// carries no totals of the whole table, and the credential reads no file
// of another partition nor any of the provider's metadata.
func TestEndToEndPartitionFilter(t *testing.T) {
	ctx := context.Background()
	f, res, admin := sharedFloe(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	tbl, err := admin.CreateTable(ctx, table.Identifier{"hr", "regions"}, sc, icecat.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for batch := range 2 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range 30 {
			b.Field(0).(*array.Int64Builder).Append(int64(batch*100 + i))
			b.Field(1).(*array.StringBuilder).Append([]string{"emea", "apac", "amer"}[i%3])
		}
		rec := b.NewRecordBatch()
		at := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
		if tbl, err = tbl.AppendTable(ctx, at, 100, nil); err != nil {
			t.Fatalf("append: %v", err)
		}
		at.Release()
		rec.Release()
		b.Release()
	}
	res.AddTable(sharing.Table{ID: "oid-eu", Share: "sales", Schema: "emea", Name: "eu", Warehouse: f.Warehouse,
		Ident: catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "regions"}, History: true, PartitionFilter: "region = 'emea'"})

	cat, err := recipientCatalog(t, f, "alice:alice-token")
	if err != nil {
		t.Fatal(err)
	}
	eu, err := cat.LoadTable(ctx, table.Identifier{"emea", "eu"})
	if err != nil {
		t.Fatalf("load a filtered table: %v", err)
	}
	at, err := eu.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	if at.NumRows() != 20 {
		t.Fatalf("the recipient read %d rows, want the 20 of emea", at.NumRows())
	}
	for _, ch := range at.Column(1).Data().Chunks() {
		for i := range ch.Len() {
			if r := ch.(*array.String).Value(i); r != "emea" {
				t.Fatalf("the recipient read a row of %s", r)
			}
		}
	}
	var raw struct {
		Snapshots []struct {
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	resp := f.DoAs(t, "alice-token", "GET", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/eu", nil)
	var lr struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	resp.JSON(t, &lr)
	if err := json.Unmarshal(lr.Metadata, &raw); err != nil || len(raw.Snapshots) != 1 {
		t.Fatalf("metadata: %v %s", err, lr.Metadata)
	}
	if len(raw.Snapshots[0].Summary) != 1 || raw.Snapshots[0].Summary["operation"] == "" {
		t.Fatalf("the filtered snapshot's summary tells about the rest: %v", raw.Snapshots[0].Summary)
	}
	// Every file of the real table outside emea, and the real metadata,
	// are refused to the recipient's credential; emea's files are not.
	live, _ := liveAndAll(t, tbl)
	cli, _ := recipientS3(t, f, "alice-token", "emea/tables/eu")
	var inside int
	for _, p := range live {
		err := s3Get(ctx, cli, p)
		if strings.Contains(p, "region=emea") {
			inside++
			if err != nil {
				t.Errorf("an emea file %s: %v", p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("the recipient's credential read %s: %v", p, err)
		}
	}
	if inside == 0 {
		t.Fatalf("no data file is in the emea partition: %v", live)
	}
	for _, loc := range []string{tbl.MetadataLocation(), tbl.CurrentSnapshot().ManifestList} {
		if err := s3Get(ctx, cli, loc); err == nil {
			t.Errorf("the recipient's credential read %s", loc)
		}
	}
	_, err = cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(f.Warehouse),
		Prefix: aws.String(strings.TrimPrefix(tbl.Location(), "s3://"+f.Warehouse+"/") + "/")})
	if err == nil {
		t.Error("the recipient's credential listed the table")
	}
	// A new append changes the view at once: the next load serves it.
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{900, 901}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"emea", "apac"}, nil)
	rec := b.NewRecordBatch()
	more := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	if _, err := tbl.AppendTable(ctx, more, 10, nil); err != nil {
		t.Fatal(err)
	}
	more.Release()
	rec.Release()
	b.Release()
	time.Sleep(10 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		eu, err = cat.LoadTable(ctx, table.Identifier{"emea", "eu"})
		if err != nil {
			t.Fatal(err)
		}
		at2, err := eu.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := at2.NumRows()
		at2.Release()
		if n == 21 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after an append the recipient reads %d rows, want 21", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Without a filter-enforcing store this table would be refused; with
	// one, the unshared real name is still unknown.
	if r := f.DoAs(t, "alice-token", "GET", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/regions", nil); r.Status != http.StatusNotFound {
		t.Fatalf("real name: %d", r.Status)
	}
}
