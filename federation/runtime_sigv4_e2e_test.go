package federation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/internal/testkit/gluedouble"
)

// TestEndToEndRuntimeSigV4Catalog: a SigV4 (AWS Glue) foreign catalog
// created at run time through the management API, with no secret stored
// (each node signs with its AWS default chain), is served: iceberg-go,
// with only a credential of the ISV's Floe, reads a table's rows through
// the Glue-shaped double, every request signed for glue/us-east-1 with the
// environment's key. One created with the wrong region, or the wrong
// service, is refused by the double and reported as 503 naming the
// signing region and service.
func TestEndToEndRuntimeSigV4Catalog(t *testing.T) {
	ctx := context.Background()
	customer := seedFloe(t, "usage", "events")
	d, srv := gluedouble.Start(t, gluedouble.Options{Region: "us-east-1", Keys: map[string]string{glueKey: glueSecret},
		Account: glueAccount, Upstream: customer.URL, UpstreamWarehouse: customer.Warehouse, UpstreamToken: customer.Token(t)})
	gluedouble.SetAWSEnv(t, glueKey, glueSecret, "us-east-1")
	isv := testkit.Start(t)
	uri := srv.URL + "/iceberg"

	for _, c := range []map[string]any{
		{"name": "lake", "uri": uri, "warehouse": glueAccount, "auth": "sigv4", "region": "us-east-1"},
		{"name": "lakeeu", "uri": uri, "warehouse": glueAccount, "auth": "sigv4", "region": "eu-west-1"},
		{"name": "lakes3", "uri": uri, "warehouse": glueAccount, "auth": "sigv4", "region": "us-east-1", "signing_name": "s3"},
	} {
		r := isv.Do(t, "POST", "/api/v1/catalogs", c)
		var fc struct {
			Auth        string `json:"auth"`
			Region      string `json:"region"`
			SigningName string `json:"signing_name"`
			Secret      string `json:"secret"`
		}
		if err := json.Unmarshal(r.Body, &fc); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("create %v: %d %s", c["name"], r.Status, r.Body)
		}
		if fc.Auth != "sigv4" || fc.Region != c["region"] || fc.SigningName == "" || fc.Secret != "none" {
			t.Fatalf("created %v: %s", c["name"], r.Body)
		}
		if strings.Contains(string(r.Body), glueSecret) {
			t.Fatalf("the AWS secret in the answer: %s", r.Body)
		}
	}
	rec, err := isv.App.Store().ForeignCatalog(ctx, "lake")
	if err != nil || rec.Auth != "sigv4" || rec.Region != "us-east-1" || rec.SigningName != "glue" || len(rec.SealedSecret) != 0 || rec.SecretEnv != "" {
		t.Fatalf("stored %+v %v", rec, err)
	}
	// A secret is refused for sigv4: credentials come from the AWS chain.
	if r := isv.Do(t, "POST", "/api/v1/catalogs", map[string]any{"name": "lakex", "uri": uri, "auth": "sigv4", "region": "us-east-1",
		"token": "x"}); r.Status != http.StatusBadRequest {
		t.Fatalf("sigv4 with a token: %d %s", r.Status, r.Body)
	}

	lake, err := rest.NewCatalog(ctx, "isv", isv.URL, rest.WithCredential(isv.Cred.String()), rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatalf("catalog lake: %v", err)
	}
	ev, err := lake.LoadTable(ctx, table.Identifier{"usage", "events"})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got := ids(t, ev); len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("rows %v", got)
	}
	signed := 0
	for _, s := range d.Seen() {
		if s.Status == http.StatusOK && strings.Contains(s.Authorization, "Credential="+glueKey+"/") &&
			strings.Contains(s.Authorization, "/us-east-1/glue/aws4_request") {
			signed++
		}
	}
	if signed == 0 {
		t.Fatalf("no request signed for glue/us-east-1: %+v", d.Seen())
	}

	for _, tc := range []struct{ catalog, refusal, scope string }{
		{"lakeeu", gluedouble.MsgWrongRegion, "signing region eu-west-1, service glue"},
		{"lakes3", gluedouble.MsgWrongService, "signing region us-east-1, service s3"},
	} {
		r := isv.Do(t, "GET", "/v1/"+tc.catalog+"/namespaces/usage/tables/events", nil)
		var em struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &em); err != nil || r.Status != http.StatusServiceUnavailable ||
			!strings.Contains(em.Error.Message, tc.scope) || !strings.Contains(em.Error.Message, tc.refusal) {
			t.Fatalf("%s: %d %s", tc.catalog, r.Status, r.Body)
		}
		t.Logf("%s: Floe answers %d: %s", tc.catalog, r.Status, em.Error.Message)
	}
}
