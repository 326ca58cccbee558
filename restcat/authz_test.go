package restcat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// principal creates a non-admin principal and returns a catalog token for it.
func principal(t *testing.T, f *testkit.Floe, name string) string {
	t.Helper()
	p, secret, err := f.App.Auth().CreatePrincipal(context.Background(), name, nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return f.TokenFor(t, p.ClientID, secret)
}

func grant(t *testing.T, f *testkit.Floe, g authz.Grant) authz.Grant {
	t.Helper()
	g, err := f.App.Authz().Grant(context.Background(), g)
	if err != nil {
		t.Fatalf("grant %+v: %v", g, err)
	}
	return g
}

// ensureGrant grants g unless the grantee holds it already.
func ensureGrant(t *testing.T, f *testkit.Floe, g authz.Grant) {
	t.Helper()
	if _, err := f.App.Authz().Grant(context.Background(), g); err != nil && floe.KindOf(err) != floe.AlreadyExists {
		t.Fatalf("grant %+v: %v", g, err)
	}
}

func errMessage(r testkit.Response) string {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Message
}

// matrixCase is one REST operation in the authorization matrix: the
// request, the privilege it needs on which securable, grants it needs
// besides, and how to put the catalog back in the state the request expects.
type matrixCase struct {
	name   string
	method string
	path   string
	body   func() string
	need   authz.Privilege
	on     authz.Securable
	also   []authz.Grant // given to the principal in every row
	ok     int           // status when allowed
	setup  func()        // run as admin before every attempt
	// dropsGrants: the call, when allowed, drops or renames the securable,
	// which removes the grants on it.
	dropsGrants bool
}

const viewSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"n","required":false,"type":"long"}]}`

func viewBody(name string) string {
	return fmt.Sprintf(`{"name":%q,"schema":%s,"view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,
	 "summary":{"engine-name":"test"},"default-namespace":["crm"],"representations":[{"type":"sql","sql":"select 1 as n","dialect":"spark"}]},
	 "properties":{}}`, name, viewSchema, time.Now().UnixMilli())
}

// TestAuthorizationMatrix checks every REST operation against every
// privilege: granted alone on the securable the operation needs, each
// privilege either allows the call (the one it needs; any, for an operation
// that needs only DESCRIBE, since every privilege implies DESCRIBE on its
// securable) or is denied with 403 and a message naming the missing
// privilege. Each row grants, calls and revokes, so it also shows that a
// revoke takes effect on the next request.
func TestAuthorizationMatrix(t *testing.T) {
	f := testkit.Start(t)
	wh := f.Warehouse
	crm := catalog.Namespace{"crm"}
	tbl := func(n string) authz.Securable { return authz.Table(wh, catalog.Ident{Namespace: crm, Name: n}) }
	view := func(n string) authz.Securable { return authz.View(wh, catalog.Ident{Namespace: crm, Name: n}) }
	nsS := authz.NamespaceOf(wh, crm)
	admin := func(method, path, body string, ok ...int) testkit.Response {
		t.Helper()
		var b any
		if body != "" {
			b = body
		}
		r := f.Do(t, method, f.P(path), b)
		if len(ok) > 0 && !containsInt(ok, r.Status) {
			t.Fatalf("admin %s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	ensureTable := func(n string) {
		if admin("HEAD", "/namespaces/crm/tables/"+n, "").Status == 404 {
			admin("POST", "/namespaces/crm/tables", createTableBody(n, ""), 200)
		}
	}
	dropTable := func(n string) { admin("DELETE", "/namespaces/crm/tables/"+n, "", 204, 404) }
	ensureView := func(n string) {
		if admin("HEAD", "/namespaces/crm/views/"+n, "").Status == 404 {
			admin("POST", "/namespaces/crm/views", viewBody(n), 200)
		}
	}
	dropView := func(n string) { admin("DELETE", "/namespaces/crm/views/"+n, "", 204, 404) }
	admin("POST", "/namespaces", `{"namespace":["crm"]}`, 200)
	ensureTable("accounts")
	ensureView("v")
	if _, _, err := f.App.Catalog().PutFunction(context.Background(), wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "fn"},
		catalog.PutFunction{Metadata: []byte(functionJSON(fnUUID, "x + 1"))}); err != nil {
		t.Fatal(err)
	}
	// A table's metadata to register: create it, note it, unregister it.
	var reg struct {
		MetadataLocation string `json:"metadata-location"`
	}
	admin("POST", "/namespaces/crm/tables", createTableBody("reg_src", ""), 200).JSON(t, &reg)
	admin("POST", "/namespaces/crm/tables/reg_src/unregister", "", 200)
	// Unregistering keeps the location claimed for its owner (here the
	// admin); release it so that the grantee may register it.
	releaseAll := func() {
		ctx := catalog.WithClaimant(context.Background(), catalog.Claimant{Admin: true})
		tombs, err := f.App.Catalog().Tombstones(ctx, wh)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tombs {
			if _, err := f.App.Catalog().ReleaseTombstone(ctx, wh, tb.Location); err != nil {
				t.Fatal(err)
			}
		}
	}
	releaseAll()
	var vreg struct {
		MetadataLocation string `json:"metadata-location"`
	}
	admin("POST", "/namespaces/crm/views", viewBody("vreg_src"), 200).JSON(t, &vreg)
	var acc struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
	}
	admin("GET", "/namespaces/crm/tables/accounts", "", 200).JSON(t, &acc)
	signURI := f.App.S3URL() + "/" + strings.TrimPrefix(acc.Metadata.Location, "s3://") + "/metadata/x.json"
	static := func(s string) func() string { return func() string { return s } }
	g := func(p authz.Privilege, s authz.Securable) authz.Grant { return authz.Grant{Privilege: p, On: s} }

	cases := []matrixCase{
		{name: "listNamespaces", method: "GET", path: "/namespaces", need: authz.Describe, on: authz.Warehouse(wh), ok: 200},
		{name: "createNamespace", method: "POST", path: "/namespaces", body: static(`{"namespace":["sales"]}`),
			need: authz.CreateNamespace, on: authz.Warehouse(wh), ok: 200,
			setup: func() { admin("DELETE", "/namespaces/sales", "", 204, 404) }},
		{name: "createNamespace(nested)", method: "POST", path: "/namespaces", body: static(`{"namespace":["crm","eu"]}`),
			need: authz.CreateNamespace, on: nsS, ok: 200,
			setup: func() { admin("DELETE", "/namespaces/crm%1Feu", "", 204, 404) }},
		{name: "loadNamespace", method: "GET", path: "/namespaces/crm", need: authz.Describe, on: nsS, ok: 200},
		{name: "namespaceExists", method: "HEAD", path: "/namespaces/crm", need: authz.Describe, on: nsS, ok: 204},
		{name: "dropNamespace", method: "DELETE", path: "/namespaces/gone", need: authz.Drop,
			on: authz.NamespaceOf(wh, catalog.Namespace{"gone"}), dropsGrants: true, ok: 204,
			setup: func() { admin("POST", "/namespaces", `{"namespace":["gone"]}`, 200, 409) }},
		{name: "updateNamespaceProperties", method: "POST", path: "/namespaces/crm/properties",
			body: static(`{"removals":[],"updates":{"owner":"sales"}}`), need: authz.Alter, on: nsS, ok: 200},
		{name: "listTables", method: "GET", path: "/namespaces/crm/tables", need: authz.Describe, on: nsS, ok: 200},
		{name: "createTable", method: "POST", path: "/namespaces/crm/tables", body: static(createTableBody("fresh", "")),
			need: authz.CreateTable, on: nsS, ok: 200, setup: func() { dropTable("fresh") }},
		{name: "registerTable", method: "POST", path: "/namespaces/crm/register",
			body: func() string { return fmt.Sprintf(`{"name":"reg","metadata-location":%q}`, reg.MetadataLocation) },
			need: authz.CreateTable, on: nsS, ok: 200,
			setup: func() { admin("POST", "/namespaces/crm/tables/reg/unregister", "", 200, 404); releaseAll() }},
		{name: "loadTable", method: "GET", path: "/namespaces/crm/tables/accounts", need: authz.Describe, on: tbl("accounts"), ok: 200},
		{name: "tableExists", method: "HEAD", path: "/namespaces/crm/tables/accounts", need: authz.Describe, on: tbl("accounts"), ok: 204},
		{name: "commitTable", method: "POST", path: "/namespaces/crm/tables/accounts",
			body: static(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`),
			need: authz.Modify, on: tbl("accounts"), ok: 200},
		{name: "dropTable", method: "DELETE", path: "/namespaces/crm/tables/dropme", need: authz.Drop, on: tbl("dropme"), dropsGrants: true, ok: 204,
			setup: func() { ensureTable("dropme") }},
		{name: "unregisterTable", method: "POST", path: "/namespaces/crm/tables/unreg/unregister", need: authz.Drop, on: tbl("unreg"), dropsGrants: true, ok: 200,
			setup: func() { ensureTable("unreg") }},
		{name: "reportMetrics", method: "POST", path: "/namespaces/crm/tables/accounts/metrics",
			body: static(`{"report-type":"scan-report","table-name":"crm.accounts","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`),
			need: authz.Describe, on: tbl("accounts"), ok: 204},
		{name: "loadCredentials", method: "GET", path: "/namespaces/crm/tables/accounts/credentials", need: authz.Select, on: tbl("accounts"), ok: 200},
		{name: "signRequest", method: "POST", path: "/namespaces/crm/tables/accounts/sign",
			body: func() string {
				return fmt.Sprintf(`{"region":"us-east-1","uri":%q,"method":"GET","headers":{}}`, signURI)
			}, need: authz.Select, on: tbl("accounts"), ok: 200},
		{name: "planTableScan", method: "POST", path: "/namespaces/crm/tables/accounts/plan", body: static(`{}`),
			need: authz.Select, on: tbl("accounts"), ok: 200},
		// A plan id or plan task of another principal does not exist for
		// the caller: with SELECT, 404 instead of 403.
		{name: "fetchPlanningResult", method: "GET", path: "/namespaces/crm/tables/accounts/plan/0123456789abcdef",
			need: authz.Select, on: tbl("accounts"), ok: 404},
		{name: "cancelPlanning", method: "DELETE", path: "/namespaces/crm/tables/accounts/plan/0123456789abcdef",
			need: authz.Select, on: tbl("accounts"), ok: 404},
		{name: "fetchScanTasks", method: "POST", path: "/namespaces/crm/tables/accounts/tasks", body: static(`{"plan-task":"cHQxOng6MQ"}`),
			need: authz.Select, on: tbl("accounts"), ok: 404},
		{name: "renameTable(source)", method: "POST", path: "/tables/rename",
			body: static(`{"source":{"namespace":["crm"],"name":"ren_a"},"destination":{"namespace":["crm"],"name":"ren_b"}}`),
			need: authz.Drop, on: tbl("ren_a"), also: []authz.Grant{g(authz.CreateTable, nsS)}, dropsGrants: true, ok: 204,
			setup: func() { dropTable("ren_b"); ensureTable("ren_a") }},
		{name: "renameTable(destination)", method: "POST", path: "/tables/rename",
			body: static(`{"source":{"namespace":["crm"],"name":"ren_a"},"destination":{"namespace":["crm"],"name":"ren_b"}}`),
			need: authz.CreateTable, on: nsS, also: []authz.Grant{g(authz.Drop, tbl("ren_a"))}, ok: 204,
			setup: func() { dropTable("ren_b"); ensureTable("ren_a") }},
		{name: "commitTransaction", method: "POST", path: "/transactions/commit",
			body: static(`{"table-changes":[{"identifier":{"namespace":["crm"],"name":"accounts"},"requirements":[],"updates":[{"action":"set-properties","updates":{"t":"x"}}]}]}`),
			need: authz.Modify, on: tbl("accounts"), ok: 204},
		{name: "listViews", method: "GET", path: "/namespaces/crm/views", need: authz.Describe, on: nsS, ok: 200},
		{name: "createView", method: "POST", path: "/namespaces/crm/views", body: func() string { return viewBody("vnew") },
			need: authz.CreateView, on: nsS, ok: 200, setup: func() { dropView("vnew") }},
		{name: "loadView", method: "GET", path: "/namespaces/crm/views/v", need: authz.Describe, on: view("v"), ok: 200},
		{name: "viewExists", method: "HEAD", path: "/namespaces/crm/views/v", need: authz.Describe, on: view("v"), ok: 204},
		{name: "replaceView", method: "POST", path: "/namespaces/crm/views/v",
			body: static(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`),
			need: authz.Modify, on: view("v"), ok: 200},
		{name: "dropView", method: "DELETE", path: "/namespaces/crm/views/vdrop", need: authz.Drop, on: view("vdrop"), dropsGrants: true, ok: 204,
			setup: func() { ensureView("vdrop") }},
		{name: "renameView", method: "POST", path: "/views/rename",
			body: static(`{"source":{"namespace":["crm"],"name":"vren_a"},"destination":{"namespace":["crm"],"name":"vren_b"}}`),
			need: authz.Drop, on: view("vren_a"), also: []authz.Grant{g(authz.CreateView, nsS)}, dropsGrants: true, ok: 204,
			setup: func() { dropView("vren_b"); ensureView("vren_a") }},
		// Functions are authorized at their namespace (no function securable yet).
		{name: "listFunctions", method: "GET", path: "/namespaces/crm/functions", need: authz.Describe, on: nsS, ok: 200},
		{name: "loadFunction", method: "GET", path: "/namespaces/crm/functions/fn", need: authz.Describe, on: nsS, ok: 200},
		{name: "registerView", method: "POST", path: "/namespaces/crm/register-view",
			body: func() string { return fmt.Sprintf(`{"name":"vreg","metadata-location":%q}`, vreg.MetadataLocation) },
			need: authz.CreateView, on: nsS, ok: 200, setup: func() { dropView("vreg") }},
	}
	covered := map[string]bool{}
	for i, c := range cases {
		covered[strings.SplitN(c.name, "(", 2)[0]] = true
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("p%02d", i)
			tok := principal(t, f, name)
			for j := range c.also {
				c.also[j].Grantee = authz.Principal(name)
				ensureGrant(t, f, c.also[j])
			}
			call := func() testkit.Response {
				if c.setup != nil {
					c.setup()
				}
				var body any
				if c.body != nil {
					body = c.body()
				}
				return f.DoAs(t, tok, c.method, f.P(c.path), body)
			}
			// No grant on the securable: denied, and the message names exactly what is missing.
			r := call()
			want := fmt.Sprintf("principal %q lacks %s on %s", name, c.need, c.on)
			if r.Status != http.StatusForbidden || (c.method != "HEAD" && !strings.HasPrefix(errMessage(r), want)) {
				t.Fatalf("without grants: %d %q, want 403 %q", r.Status, errMessage(r), want)
			}
			for _, p := range authz.AllPrivileges() {
				gr := authz.Grant{Grantee: authz.Principal(name), Privilege: p, On: c.on}
				if !c.on.IsData() && (p == authz.Select || p == authz.Modify) {
					gr.AllTables = true
				}
				if c.on.IsData() && !canGrantOnData(p) {
					continue // not grantable on a table or view
				}
				if p == authz.CreateShare && c.on.Kind != authz.KindWarehouse {
					continue // granted on a warehouse only
				}
				for _, a := range c.also {
					ensureGrant(t, f, a) // a rename removes the grants on its source
				}
				gr = grant(t, f, gr)
				r := call()
				allowed := p == c.need || c.need == authz.Describe
				switch {
				case allowed && r.Status != c.ok:
					t.Errorf("with %s: %d %s, want %d", p, r.Status, r.Body, c.ok)
				case !allowed && r.Status != http.StatusForbidden:
					t.Errorf("with only %s: %d %s, want 403", p, r.Status, r.Body)
				case !allowed && c.method != "HEAD" && !strings.HasPrefix(errMessage(r), want):
					t.Errorf("with only %s: message %q, want %q", p, errMessage(r), want)
				}
				// Dropping or renaming the securable removes its grants.
				if err := f.App.Authz().RevokeID(context.Background(), gr.ID); err != nil && !(allowed && c.dropsGrants && floe.KindOf(err) == floe.NotFound) {
					t.Fatalf("revoke %s: %v", p, err)
				}
				if r := call(); r.Status != http.StatusForbidden {
					t.Errorf("after revoking %s: %d, want 403", p, r.Status)
				}
			}
		})
	}
	// Every route of the handler is in the matrix (getConfig needs no privilege).
	for _, ep := range f.App.RESTOperations() {
		if !covered[ep] {
			t.Errorf("operation %s is not in the authorization matrix", ep)
		}
	}
}

func canGrantOnData(p authz.Privilege) bool {
	switch p {
	case authz.Describe, authz.Select, authz.Modify, authz.Drop, authz.ManageGrants:
		return true
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
