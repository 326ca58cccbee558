package federation_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// locations through the remote Floe's S3 endpoint
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

var rowSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// remoteFloe starts the remote catalog (another Floe) with crm.accounts
// (ids 1-5) and crm.secret, and a Floe that federates it as "acme" with
// OAuth2 client credentials whose secret comes from the environment.
func remoteFloe(t testing.TB) (remote, local *testkit.Floe, front *httptest.Server) {
	t.Helper()
	remote = seedFloe(t, "crm", "accounts", "secret")
	// The local Floe reaches the remote through a proxy the outage test
	// stops.
	target, err := url.Parse(remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	front = httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(front.Close)
	env := map[string]string{"ACME_SECRET": remote.Cred.Secret}
	local = testkit.Start(t, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: front.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET"}}
	})
	return remote, local, front
}

// seedFloe starts a Floe holding tables ns.<name> of ids 1-5, written by
// iceberg-go.
func seedFloe(t testing.TB, ns string, tables ...string) *testkit.Floe {
	t.Helper()
	ctx := context.Background()
	f := testkit.Start(t)
	cat, err := rest.NewCatalog(ctx, "seed", f.URL, rest.WithCredential(f.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	for _, name := range tables {
		tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := appendIDs(ctx, tbl, 1, 2, 3, 4, 5); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// appendIDs appends rows of rowSchema with the given ids to tbl, in one
// commit.
func appendIDs(ctx context.Context, tbl *table.Table, ids ...int64) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rowSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(rowSchema, []arrow.RecordBatch{rec})
	defer at.Release()
	_, err := tbl.AppendTable(ctx, at, 10, nil)
	return err
}

func ids(t *testing.T, tbl *table.Table) []int64 {
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

// TestEndToEndFederatedCatalog: iceberg-go, with only a credential of the
// local Floe, lists and reads the remote Floe's tables in place through the
// foreign catalog "acme"; Floe's own grants decide what each principal
// sees and whether it gets the remote's credentials; writes are refused;
// every remote call is audited with the local principal.
func TestEndToEndFederatedCatalog(t *testing.T) {
	ctx := context.Background()
	_, local, _ := remoteFloe(t)
	admin, err := rest.NewCatalog(ctx, "local", local.URL, rest.WithCredential(local.Cred.String()), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatalf("catalog acme: %v", err)
	}
	nss, err := admin.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "crm" {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	var names []string
	for id, err := range admin.ListTables(ctx, table.Identifier{"crm"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(id, "."))
	}
	if strings.Join(names, ",") != "crm.accounts,crm.secret" {
		t.Fatalf("tables %v", names)
	}
	acc, err := admin.LoadTable(ctx, table.Identifier{"crm", "accounts"})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got := ids(t, acc); len(got) != 5 || got[0] != 1 {
		t.Fatalf("rows %v", got)
	}
	if err := admin.CreateNamespace(ctx, table.Identifier{"new"}, nil); err == nil {
		t.Fatal("a namespace was created in a foreign catalog")
	}

	// bob: SELECT on acme.crm.accounts only. carol: DESCRIBE on it only.
	acmeAcc := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	for _, g := range []authz.Grant{{Grantee: authz.Principal("bob"), Privilege: authz.Select, On: acmeAcc},
		{Grantee: authz.Principal("bob"), Privilege: authz.Describe, On: acmeAcc},
		{Grantee: authz.Principal("carol"), Privilege: authz.Describe, On: acmeAcc}} {
		if _, err := local.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	bobTok := local.PrincipalToken(t, "bob")
	carolTok := local.PrincipalToken(t, "carol")
	daveTok := local.PrincipalToken(t, "dave") // nothing on acme
	tables := "/v1/acme/namespaces/crm/tables"
	if r := local.DoAs(t, bobTok, "GET", tables, nil); r.Status != 200 || !strings.Contains(string(r.Body), "accounts") ||
		strings.Contains(string(r.Body), "secret") {
		t.Fatalf("bob lists: %d %s", r.Status, r.Body)
	}
	if r := local.DoAs(t, bobTok, "GET", tables+"/secret", nil); r.Status != http.StatusForbidden {
		t.Fatalf("bob loads secret: %d %s", r.Status, r.Body)
	}
	bob, err := rest.NewCatalog(ctx, "bob", local.URL, rest.WithOAuthToken(bobTok), rest.WithWarehouseLocation("acme"))
	if err != nil {
		t.Fatal(err)
	}
	bacc, err := bob.LoadTable(ctx, table.Identifier{"crm", "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, bacc); len(got) != 5 {
		t.Fatalf("bob reads %v", got)
	}
	var lr struct {
		Config             map[string]string `json:"config"`
		StorageCredentials []any             `json:"storage-credentials"`
	}
	r := local.DoAs(t, carolTok, "GET", tables+"/accounts", nil)
	r.JSON(t, &lr)
	if r.Status != 200 || lr.Config["s3.access-key-id"] != "" || len(lr.StorageCredentials) != 0 ||
		!strings.Contains(lr.Config["floe.credentials"], "SELECT") {
		t.Fatalf("carol (DESCRIBE only) got credentials or no note: %d %s", r.Status, r.Body)
	}
	if r := local.DoAs(t, carolTok, "GET", tables+"/accounts/credentials", nil); r.Status != http.StatusForbidden ||
		!strings.Contains(string(r.Body), "SELECT") {
		t.Fatalf("carol's credentials: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{tables, tables + "/accounts", "/v1/acme/namespaces"} {
		if r := local.DoAs(t, daveTok, "GET", p, nil); r.Status != http.StatusForbidden {
			t.Fatalf("dave %s: %d %s", p, r.Status, r.Body)
		}
	}
	// Audit: the remote calls, with the local principal whose request
	// made them (the admin's: bob's and carol's loads were answered from
	// the client's cache, within its TTL, and are audited locally).
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := local.App.Store().AuditRecords(ctx, 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range recs {
			if rec.Action == "federation.remote.loadTable" && rec.Principal == "admin" && rec.Resource == "catalog:acme" &&
				strings.Contains(string(rec.Detail), `"token_id":"`) && strings.Contains(string(rec.Detail), `"status":200`) {
				found = true
			}
			if strings.Contains(string(rec.Detail), local.Cred.Secret) || strings.Contains(string(rec.Detail), "Bearer ") {
				t.Fatalf("a secret in an audit record: %s", rec.Detail)
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			for _, rec := range recs {
				if strings.HasPrefix(rec.Action, "federation.") {
					t.Logf("%s %s %s %s", rec.Action, rec.Principal, rec.Resource, rec.Detail)
				}
			}
			t.Fatal("no federation.remote.loadTable event for the admin")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEndToEndRemoteOutage: with the remote stopped, the foreign catalog
// answers 503 naming it, quickly; the local catalog is unaffected.
func TestEndToEndRemoteOutage(t *testing.T) {
	_, local, front := remoteFloe(t)
	if r := local.Do(t, "GET", "/v1/acme/namespaces/crm/tables/accounts", nil); r.Status != 200 {
		t.Fatalf("before: %d %s", r.Status, r.Body)
	}
	front.Close()
	start := time.Now()
	r := local.Do(t, "GET", "/v1/acme/namespaces/crm/tables/secret", nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "acme") {
		t.Fatalf("remote down: %d %s", r.Status, r.Body)
	}
	if d := time.Since(start); d > 12*time.Second {
		t.Fatalf("the outage took %s to answer", d)
	}
	if r := local.Do(t, "GET", local.P("/namespaces"), nil); r.Status != 200 {
		t.Fatalf("the local warehouse after the outage: %d %s", r.Status, r.Body)
	}
}
