package multinode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore/bucket"
)

// TestNodes_PolicyFilteredPlanCredentialOnEveryNode: the credential of a
// policy-filtered plan made on one node names its files inside its own
// session token, so another node's S3 endpoint serves exactly those files
// (and refuses the table's other files) with no state shared for it.
func TestNodes_PolicyFilteredPlanCredentialOnEveryNode(t *testing.T) {
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	ctx := context.Background()
	cat := a.App.Catalog()
	nsp := catalog.Namespace{"pp"}
	if err := cat.CreateNamespace(ctx, a.Warehouse, nsp, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	if _, err := cat.CreateTable(ctx, a.Warehouse, nsp, catalog.CreateTableRequest{Name: "t", Schema: sc, Spec: &spec}); err != nil {
		t.Fatal(err)
	}
	id := catalog.Ident{Namespace: nsp, Name: "t"}
	tbl, err := lake.New(cat, lake.NewBucketFS(a.App.Objects()), lake.Options{}).LoadTable(ctx, a.Warehouse, id)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]iceberg.DataFile, 4)
	for i := range files {
		bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, fmt.Sprintf("%s/data/f-%d.parquet", tbl.Location(), i),
			iceberg.ParquetFile, map[int]any{1000: fmt.Sprintf("r%d", i%2)}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = bld.Build()
		if _, err := a.App.Objects().Put(ctx, "floe", strings.TrimPrefix(files[i].FilePath(), "s3://floe/"), strings.NewReader("data"), bucket.PutOptions{Size: 4}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lake.AppendFiles(ctx, tbl, files, nil); err != nil {
		t.Fatal(err)
	}
	p, secret, err := a.App.Auth().CreatePrincipal(ctx, "eu", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("eu"), Privilege: authz.Select,
		On: authz.Table(a.Warehouse, id), Filter: &authz.DataFilter{RowFilter: "region = 'r1'"}}); err != nil {
		t.Fatal(err)
	}
	r := a.DoAs(t, a.TokenFor(t, p.ClientID, secret), "POST", a.P("/namespaces/pp/tables/t/plan"), `{}`)
	if r.Status != 200 {
		t.Fatalf("plan on node 1: %d %s", r.Status, r.Body)
	}
	var plan struct {
		Tasks []struct {
			DataFile struct {
				FilePath string `json:"file-path"`
			} `json:"data-file"`
		} `json:"file-scan-tasks"`
		Creds []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	r.JSON(t, &plan)
	if len(plan.Tasks) != 2 || len(plan.Creds) != 1 {
		t.Fatalf("plan %s", r.Body)
	}
	c := plan.Creds[0].Config
	client := s3.New(s3.Options{BaseEndpoint: aws.String(b.App.S3URL()), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	get := func(path string) error {
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(strings.TrimPrefix(path, "s3://floe/"))})
		if err == nil {
			_, _ = io.Copy(io.Discard, out.Body)
			out.Body.Close()
		}
		return err
	}
	for _, tk := range plan.Tasks {
		if err := get(tk.DataFile.FilePath); err != nil {
			t.Errorf("node 2 GET %s: %v", tk.DataFile.FilePath, err)
		}
	}
	var ae smithy.APIError
	if err := get(files[0].FilePath()); !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
		t.Errorf("node 2 GET of an r0 file: %v, want AccessDenied", err)
	}
}
