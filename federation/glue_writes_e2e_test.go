package federation_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/internal/testkit/gluedouble"
)

// assumeCall is one AssumeRole the fake STS answered.
type assumeCall struct{ role, externalID, signedBy string }

// fakeSTS answers AssumeRole for the roles it knows with a fixed key pair
// each, and records who asked for which role.
func fakeSTS(t *testing.T, roles map[string][2]string) (*httptest.Server, func() []assumeCall) {
	t.Helper()
	var mu sync.Mutex
	var calls []assumeCall
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "AssumeRole" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		signedBy := ""
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			signedBy, _, _ = strings.Cut(cred, "/")
		}
		role := r.PostForm.Get("RoleArn")
		mu.Lock()
		calls = append(calls, assumeCall{role: role, externalID: r.PostForm.Get("ExternalId"), signedBy: signedBy})
		mu.Unlock()
		key, ok := roles[role]
		if !ok {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized</Message></Error></ErrorResponse>`)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>session-%s</SessionToken>
<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><Arn>%s/floe</Arn><AssumedRoleId>AROA:floe</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></AssumeRoleResponse>`, key[0], key[1], key[0], role)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []assumeCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]assumeCall(nil), calls...)
	}
}

// TestEndToEndGlueSigV4Writes: a SigV4 (Glue) foreign catalog created at
// run time with writes on assumes two roles on top of the node's AWS
// chain (the reader's role_arn and the writer's write_role_arn, both with
// the external id): iceberg-go, through the ISV's Floe, creates a
// namespace and a table in the Glue-shaped double and appends rows, every
// write signed with the write role's key; a SELECT-only principal's load
// is signed with the read role's key. The environment's own key signs
// nothing but the AssumeRole calls.
func TestEndToEndGlueSigV4Writes(t *testing.T) {
	ctx := context.Background()
	const (
		readRole, writeRole = "arn:aws:iam::123456789012:role/isv-reader", "arn:aws:iam::123456789012:role/isv-writer"
		readKey, writeKey   = "ASIAREADERROLE", "ASIAWRITERROLE"
	)
	customer := seedFloe(t, "usage", "events")
	d, srv := gluedouble.Start(t, gluedouble.Options{Region: "us-east-1",
		Keys:    map[string]string{readKey: "reader-role-secret", writeKey: "writer-role-secret"},
		Account: glueAccount, Upstream: customer.URL, UpstreamWarehouse: customer.Warehouse, UpstreamToken: customer.Token(t)})
	sts, assumed := fakeSTS(t, map[string][2]string{readRole: {readKey, "reader-role-secret"}, writeRole: {writeKey, "writer-role-secret"}})
	gluedouble.SetAWSEnv(t, glueKey, glueSecret, "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	isv := testkit.Start(t)
	r := isv.Do(t, "POST", "/api/v1/catalogs", map[string]any{"name": "lake", "uri": srv.URL + "/iceberg", "warehouse": glueAccount,
		"auth": "sigv4", "region": "us-east-1", "role_arn": readRole, "external_id": "isv-7f3a", "writes": true, "write_role_arn": writeRole})
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"write_external_id":"isv-7f3a"`) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}

	lake, err := rest.NewCatalog(ctx, "isv", isv.URL, rest.WithCredential(isv.Cred.String()), rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.CreateNamespace(ctx, table.Identifier{"made"}, nil); err != nil {
		t.Fatalf("create namespace through the Glue catalog: %v", err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := lake.CreateTable(ctx, table.Identifier{"made", "t"}, sc)
	if err != nil {
		t.Fatalf("create table through the Glue catalog: %v", err)
	}
	if err := appendIDs(ctx, tbl, 41, 42); err != nil {
		t.Fatalf("append through the Glue catalog: %v", err)
	}
	ccat, err := rest.NewCatalog(ctx, "customer", customer.URL, rest.WithCredential(customer.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	ct, err := ccat.LoadTable(ctx, table.Identifier{"made", "t"})
	if err != nil {
		t.Fatalf("the customer's load: %v", err)
	}
	if got := ids(t, ct); len(got) != 2 || got[0] != 41 {
		t.Fatalf("rows in the customer's lake %v", got)
	}

	// A SELECT-only principal's load goes out with the read role.
	ev := authz.Table("lake", catalog.Ident{Namespace: catalog.Namespace{"usage"}, Name: "events"})
	for _, p := range []authz.Privilege{authz.Describe, authz.Select} {
		if _, err := isv.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("analyst"), Privilege: p, On: ev}); err != nil {
			t.Fatal(err)
		}
	}
	analyst := isv.PrincipalToken(t, "analyst")
	if r := isv.DoAs(t, analyst, "GET", "/v1/lake/namespaces/usage/tables/events", nil); r.Status != http.StatusOK {
		t.Fatalf("analyst's load: %d %s", r.Status, r.Body)
	}

	signer := func(s gluedouble.Seen) string {
		_, cred, _ := strings.Cut(s.Authorization, "Credential=")
		k, _, _ := strings.Cut(cred, "/")
		return k
	}
	writes, readLoads := 0, 0
	for _, s := range d.Seen() {
		if s.Status/100 != 2 {
			t.Errorf("the double refused %s %s: %d %s", s.Method, s.Path, s.Status, s.Refusal)
			continue
		}
		switch k := signer(s); {
		case s.Method == http.MethodPost:
			writes++
			if k != writeKey {
				t.Errorf("write %s %s signed by %s, want the write role's %s", s.Method, s.Path, k, writeKey)
			}
		case k == readKey && strings.HasSuffix(s.Path, "/namespaces/usage/tables/events"):
			readLoads++
		case k != readKey && k != writeKey:
			t.Errorf("%s %s signed by %s, neither role", s.Method, s.Path, k)
		}
	}
	if writes < 3 || readLoads == 0 {
		t.Fatalf("writes signed by the write role %d (want createNamespace, createTable, commit), loads by the read role %d", writes, readLoads)
	}
	roles := map[string]bool{}
	for _, c := range assumed() {
		if c.externalID != "isv-7f3a" || c.signedBy != glueKey {
			t.Errorf("AssumeRole %+v: want external id isv-7f3a, signed with the chain's %s", c, glueKey)
		}
		roles[c.role] = true
	}
	if !roles[readRole] || !roles[writeRole] {
		t.Fatalf("roles assumed %v", roles)
	}
}
