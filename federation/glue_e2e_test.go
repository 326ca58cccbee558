package federation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/internal/testkit/gluedouble"
)

const (
	glueAccount = "123456789012"
	glueKey     = "AKIDCUSTOMERLAKE"
	glueSecret  = "customer-lake-secret-key-never-logged"
)

// glueLake starts the customer's lake (a Floe with usage.events, ids
// 1-5, written by iceberg-go), the Glue-shaped double in front of it
// (SigV4 for glue in us-east-1), and the ISV's Floe federating the double
// as "lake" with auth sigv4, its AWS credentials from the environment
// chain, plus two mis-configured catalogs: "lakeeu" signs for eu-west-1,
// "lakes3" signs for service s3.
func glueLake(t *testing.T) (customer, isv *testkit.Floe, d *gluedouble.Double) {
	t.Helper()
	customer = seedFloe(t, "usage", "events")

	d, srv := gluedouble.Start(t, gluedouble.Options{Region: "us-east-1", Keys: map[string]string{glueKey: glueSecret},
		Account: glueAccount, Upstream: customer.URL, UpstreamWarehouse: customer.Warehouse, UpstreamToken: customer.Token(t)})
	gluedouble.SetAWSEnv(t, glueKey, glueSecret, "us-east-1")
	uri := srv.URL + "/iceberg"
	isv = testkit.Start(t, func(c *app.Config) {
		c.FederatedCatalogs = []federation.Catalog{
			{Name: "lake", URI: uri, Warehouse: glueAccount, Auth: federation.AuthSigV4, Region: "us-east-1"},
			{Name: "lakeeu", URI: uri, Warehouse: glueAccount, Auth: federation.AuthSigV4, Region: "eu-west-1"},
			{Name: "lakes3", URI: uri, Warehouse: glueAccount, Auth: federation.AuthSigV4, Region: "us-east-1", SigningName: "s3"},
		}
	})
	return customer, isv, d
}

// TestEndToEndGlueSigV4: iceberg-go, with only a credential of the ISV's
// Floe, lists the namespaces of the Glue-shaped catalog "lake" and reads a
// table's rows in place with the credentials the customer's lake vended,
// every request to the double SigV4-signed with the environment's key;
// a wrong signing region or service is refused by the double and
// reported as 503 naming them; every remote call is audited without a
// secret.
func TestEndToEndGlueSigV4(t *testing.T) {
	ctx := context.Background()
	customer, isv, d := glueLake(t)

	lake, err := rest.NewCatalog(ctx, "isv", isv.URL, rest.WithCredential(isv.Cred.String()), rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatalf("catalog lake: %v", err)
	}
	nss, err := lake.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "usage" {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	ev, err := lake.LoadTable(ctx, table.Identifier{"usage", "events"})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got := ids(t, ev); len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("rows %v", got)
	}
	// The credentials are the customer lake's, for its S3 endpoint,
	// passed through unchanged.
	var lr struct {
		Config             map[string]string `json:"config"`
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	r := isv.Do(t, "GET", "/v1/lake/namespaces/usage/tables/events", nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	r.JSON(t, &lr)
	creds := lr.Config
	if len(lr.StorageCredentials) > 0 {
		creds = lr.StorageCredentials[0].Config
	}
	if r.Status != 200 || creds["s3.access-key-id"] == "" || creds["s3.endpoint"] != customer.App.S3URL() {
		t.Fatalf("load through the double: %d %s", r.Status, r.Body)
	}

	// Every request the double answered was signed for glue/us-east-1
	// with the environment's key, in Glue's layout.
	loads := 0
	for _, s := range d.Seen() {
		if s.Status != http.StatusOK {
			continue
		}
		if !strings.Contains(s.Authorization, "Credential="+glueKey+"/") || !strings.Contains(s.Authorization, "/us-east-1/glue/aws4_request") {
			t.Fatalf("request %s signed %q", s.Path, s.Authorization)
		}
		if s.Path == "/iceberg/v1/catalogs/"+glueAccount+"/namespaces/usage/tables/events" {
			loads++
		}
	}
	if loads == 0 {
		t.Fatalf("no loadTable in Glue's layout: %+v", d.Seen())
	}

	for _, tc := range []struct{ catalog, refusal, scope string }{
		{"lakeeu", gluedouble.MsgWrongRegion, "signing region eu-west-1, service glue"},
		{"lakes3", gluedouble.MsgWrongService, "signing region us-east-1, service s3"},
	} {
		t.Run(tc.catalog, func(t *testing.T) {
			r := isv.Do(t, "GET", "/v1/"+tc.catalog+"/namespaces", nil)
			var em struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &em); err != nil {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if r.Status != http.StatusServiceUnavailable || !strings.Contains(em.Error.Message, tc.catalog) ||
				!strings.Contains(em.Error.Message, tc.scope) || !strings.Contains(em.Error.Message, tc.refusal) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			t.Logf("Floe answers %d: %s", r.Status, em.Error.Message)
		})
	}

	// Audit: the remote calls of lake (successful) and of the refused
	// catalogs (with the refusal), none with a secret.
	want := map[string]bool{"lake 200": false, "lakeeu 403": false, "lakes3 403": false}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := isv.App.Store().AuditRecords(ctx, 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			detail := string(rec.Detail)
			for _, secret := range []string{glueSecret, "Signature=", "AWS4-HMAC-SHA256", customer.Cred.Secret, customer.Token(t)} {
				if strings.Contains(detail, secret) {
					t.Fatalf("a secret in an audit record: %s %s", rec.Action, detail)
				}
			}
			if !strings.HasPrefix(rec.Action, "federation.remote.") || rec.Principal != "admin" {
				continue
			}
			var dt struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			}
			_ = json.Unmarshal(rec.Detail, &dt)
			cat := strings.TrimPrefix(rec.Resource, "catalog:")
			key := cat + " " + strconv.Itoa(dt.Status)
			if _, ok := want[key]; ok && (dt.Status == 200 || strings.Contains(dt.Error, "SigV4")) {
				want[key] = true
			}
		}
		done := true
		for _, ok := range want {
			done = done && ok
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit records missing: %v", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
