package federation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// writingFederation starts the remote (a Floe with crm.accounts, ids 1-5)
// with two identities for the ISV's Floe: fed-reader (DESCRIBE and SELECT
// on the warehouse's tables) and fed-writer (also MODIFY, CREATE_TABLE,
// CREATE_NAMESPACE and DROP); and the ISV's Floe, where an administrator
// creates the foreign catalog "acme" through the management API with
// writes on, the reader's secret and the writer's (both sealed).
func writingFederation(t testing.TB) (remote, local *testkit.Floe, readerID, writerID string) {
	t.Helper()
	ctx := t.Context()
	remote = seedFloe(t, "crm", "accounts")
	wh := authz.Warehouse(remote.Warehouse)
	reader, readerSecret, err := remote.App.Auth().CreatePrincipal(ctx, "fed-reader", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	writer, writerSecret, err := remote.App.Auth().CreatePrincipal(ctx, "fed-writer", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	grant := func(who string, p authz.Privilege, all bool) {
		t.Helper()
		if _, err := remote.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(who), Privilege: p, On: wh, AllTables: all}); err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"fed-reader", "fed-writer"} {
		grant(who, authz.Describe, true)
		grant(who, authz.Select, true)
	}
	grant("fed-writer", authz.Modify, true)
	grant("fed-writer", authz.Drop, true)
	grant("fed-writer", authz.CreateNamespace, false)
	grant("fed-writer", authz.CreateTable, false)

	local = testkit.Start(t)
	body := map[string]any{"name": "acme", "uri": remote.URL, "warehouse": remote.Warehouse, "auth": "oauth2",
		"client_id": reader.ClientID, "client_secret": readerSecret,
		"writes": true, "write_client_id": writer.ClientID, "write_client_secret": writerSecret}
	r := local.Do(t, "POST", "/api/v1/catalogs", body)
	if r.Status != http.StatusCreated || strings.Contains(string(r.Body), writerSecret) || strings.Contains(string(r.Body), readerSecret) ||
		!strings.Contains(string(r.Body), `"writes":true`) || !strings.Contains(string(r.Body), `"write_secret":"set"`) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	return remote, local, reader.ClientID, writer.ClientID
}

// loadCreds loads acme's crm.accounts as the holder of token with
// vended credentials and returns the storage config it got.
func loadCreds(t *testing.T, f *testkit.Floe, token, path string) map[string]string {
	t.Helper()
	r := f.DoAs(t, token, "GET", path, nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	var lr struct {
		Config             map[string]string `json:"config"`
		StorageCredentials []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if r.Status != http.StatusOK {
		t.Fatalf("load %s: %d %s", path, r.Status, r.Body)
	}
	r.JSON(t, &lr)
	c := lr.Config
	if len(lr.StorageCredentials) > 0 {
		c = lr.StorageCredentials[0].Config
	}
	return c
}

// TestEndToEndForeignWrites: writes forwarded to a remote Floe with the
// write identity, when the foreign catalog's writes are on.
//
//   - (attack) a local principal with SELECT only gets the read identity's
//     vended credentials, never the write identity's: their access key
//     ids differ, and the read ones cannot put an object where the write
//     ones can;
//   - (attack) that principal's commit is refused in Floe naming MODIFY,
//     and the remote table is unchanged;
//   - iceberg-go, holding only a credential of the local Floe and CREATE_TABLE
//     on the foreign namespace, creates a table and appends rows in the
//     foreign catalog; the remote's own client reads them back;
//   - every forwarded write is audited with the write identity, the
//     operation and the outcome, never a secret.
func TestEndToEndForeignWrites(t *testing.T) {
	ctx := context.Background()
	remote, local, _, _ := writingFederation(t)
	accounts := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	ns := authz.NamespaceOf("acme", catalog.Namespace{"crm"})
	for _, g := range []authz.Grant{
		{Grantee: authz.Principal("sel"), Privilege: authz.Describe, On: accounts},
		{Grantee: authz.Principal("sel"), Privilege: authz.Select, On: accounts},
		{Grantee: authz.Principal("mod"), Privilege: authz.Describe, On: accounts},
		{Grantee: authz.Principal("mod"), Privilege: authz.Select, On: accounts},
		{Grantee: authz.Principal("mod"), Privilege: authz.Modify, On: accounts},
		{Grantee: authz.Principal("mod"), Privilege: authz.CreateTable, On: ns},
	} {
		if _, err := local.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	selCred, modCred := local.NewPrincipal(t, "sel"), local.NewPrincipal(t, "mod")
	sel, mod := local.TokenFor(t, selCred.ClientID, selCred.Secret), local.TokenFor(t, modCred.ClientID, modCred.Secret)
	const path = "/v1/acme/namespaces/crm/tables/accounts"

	// Credentials: the read identity's for sel, the write identity's for mod.
	readCreds, writeCreds := loadCreds(t, local, sel, path), loadCreds(t, local, mod, path)
	if readCreds["s3.access-key-id"] == "" || writeCreds["s3.access-key-id"] == "" {
		t.Fatalf("no credentials: read %v, write %v", readCreds, writeCreds)
	}
	if readCreds["s3.access-key-id"] == writeCreds["s3.access-key-id"] {
		t.Fatalf("sel and mod got the same access key id %s", readCreds["s3.access-key-id"])
	}
	var meta struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
	}
	local.Do(t, "GET", path, nil).JSON(t, &meta)
	bucket, prefix, ok := strings.Cut(strings.TrimPrefix(meta.Metadata.Location, "s3://"), "/")
	if !ok {
		t.Fatalf("table location %q", meta.Metadata.Location)
	}
	put := func(c map[string]string, key string) error {
		cli := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
		_, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/data/" + key),
			Body: strings.NewReader("x")})
		return err
	}
	if err := put(readCreds, "by-reader.txt"); err == nil {
		t.Fatal("the read identity's credentials (handed to a SELECT-only caller) wrote to the table's storage")
	}
	if err := put(writeCreds, "by-writer.txt"); err != nil {
		t.Fatalf("the write identity's credentials cannot write: %v", err)
	}

	// sel may not commit: refused in Floe, the remote untouched.
	before := remote.Do(t, "GET", "/v1/"+remote.Warehouse+"/namespaces/crm/tables/accounts", nil)
	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"by":"sel"}}]}`
	if r := local.DoAs(t, sel, "POST", path, commit); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "lacks MODIFY") {
		t.Fatalf("sel's commit: %d %s", r.Status, r.Body)
	}
	after := remote.Do(t, "GET", "/v1/"+remote.Warehouse+"/namespaces/crm/tables/accounts", nil)
	var b1, b2 struct {
		Loc string `json:"metadata-location"`
	}
	before.JSON(t, &b1)
	after.JSON(t, &b2)
	if b1.Loc != b2.Loc {
		t.Fatalf("the remote table changed after a denied commit: %s -> %s", b1.Loc, b2.Loc)
	}

	// mod, through the local Floe, creates crm.orders and appends rows.
	cat, err := rest.NewCatalog(ctx, "local", local.URL, rest.WithCredential(modCred.ClientID+":"+modCred.Secret), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"crm", "orders"}, sc)
	if err != nil {
		t.Fatalf("create through the foreign catalog: %v", err)
	}
	if err := appendIDs(ctx, tbl, 7, 8, 9); err != nil {
		t.Fatalf("append through the foreign catalog: %v", err)
	}
	// The remote's own client reads them back: the table is the remote's.
	rcat, err := rest.NewCatalog(ctx, "remote", remote.URL, rest.WithCredential(remote.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rcat.LoadTable(ctx, table.Identifier{"crm", "orders"})
	if err != nil {
		t.Fatalf("the remote's load: %v", err)
	}
	if got := ids(t, rt); len(got) != 3 || got[0] != 7 || got[2] != 9 {
		t.Fatalf("rows on the remote %v", got)
	}
	// And through the local Floe, its new snapshot at once (the cache was
	// invalidated by the write).
	lt, err := cat.LoadTable(ctx, table.Identifier{"crm", "orders"})
	if err != nil || lt.MetadataLocation() != rt.MetadataLocation() {
		t.Fatalf("local load after the write: %v %v (remote %s)", lt, err, rt.MetadataLocation())
	}

	// Audit: the forwarded writes, with the write identity; no secret.
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := local.App.Store().AuditRecords(ctx, 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, rec := range recs {
			for _, secret := range []string{modCred.Secret, selCred.Secret, readCreds["s3.secret-access-key"], writeCreds["s3.secret-access-key"]} {
				if secret != "" && strings.Contains(string(rec.Detail), secret) {
					t.Fatalf("a secret in an audit record: %s %s", rec.Action, rec.Detail)
				}
			}
			var d struct {
				Identity string `json:"identity"`
				Status   int    `json:"status"`
			}
			_ = json.Unmarshal(rec.Detail, &d)
			if strings.HasPrefix(rec.Action, "federation.remote.") && rec.Principal == "mod" && d.Identity == "write" && d.Status/100 == 2 {
				found[strings.TrimPrefix(rec.Action, "federation.remote.")] = true
			}
		}
		if found["createTable"] && found["commitTable"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwarded writes not audited: %v", found)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
