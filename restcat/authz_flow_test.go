package restcat_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/vend"
)

func listNames(t *testing.T, f *testkit.Floe, tok, path string) []string {
	t.Helper()
	r := f.DoAs(t, tok, "GET", f.P(path), nil)
	mustStatus(t, r, 200)
	var out struct {
		Namespaces  [][]string `json:"namespaces"`
		Identifiers []struct {
			Name string `json:"name"`
		} `json:"identifiers"`
		Next *string `json:"next-page-token"`
	}
	r.JSON(t, &out)
	var names []string
	for _, ns := range out.Namespaces {
		names = append(names, strings.Join(ns, "."))
	}
	for _, id := range out.Identifiers {
		names = append(names, id.Name)
	}
	return names
}

// accessOf returns the vended access key id, "" when none was vended.
func accessOf(t *testing.T, f *testkit.Floe, lr loadResult) string {
	t.Helper()
	if lr.Config["s3.access-key-id"] == "" && len(lr.StorageCredentials) != 0 {
		t.Fatalf("storage-credentials without config keys: %+v", lr)
	}
	if lr.Config["s3.access-key-id"] == "" {
		return ""
	}
	// A notice credential reads nothing: it carries the reason of the
	// refusal to the S3 endpoint (vend.Notice).
	if s := resolve(t, f, lr); s.Notice != "" {
		if len(lr.StorageCredentials) != 0 || lr.Config["client.refresh-credentials-endpoint"] != "" {
			t.Errorf("notice credential offered as storage credentials: %+v", lr)
		}
		if got := lr.Config[restcat.StorageAccessKey]; got != "none: "+s.Notice {
			t.Errorf("%s = %q, notice %q", restcat.StorageAccessKey, got, s.Notice)
		}
		for _, g := range s.Grants {
			if g.Access != vend.Notice || s.Allows(g.Bucket, g.Prefix+"x", false) {
				t.Errorf("notice credential allows %+v", g)
			}
		}
		return ""
	}
	return lr.Config["s3.access-key-id"]
}

func TestDescribeOnlySeesEverythingButGetsNoCredentials(t *testing.T) {
	f := testkit.Start(t)
	f.CreateTable(t, "crm", "accounts")
	f.CreateTable(t, "crm", "contacts")
	f.CreateTable(t, "hr", "people")
	tok := principal(t, f, "glue-federation")

	// Nothing granted: listing says exactly what is missing.
	r := f.DoAs(t, tok, "GET", f.P("/namespaces"), nil)
	wantErr(t, r, 403, "ForbiddenException", `principal "glue-federation" lacks DESCRIBE on warehouse "`+f.Warehouse+`"`)
	r = f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables"), nil)
	wantErr(t, r, 403, "ForbiddenException", `principal "glue-federation" lacks DESCRIBE on namespace "crm"`)

	// DESCRIBE on the warehouse, for all tables: discover and load everything.
	grant(t, f, authz.Grant{Grantee: authz.Principal("glue-federation"), Privilege: authz.Describe,
		On: authz.Warehouse(f.Warehouse), AllTables: true})
	if got := listNames(t, f, tok, "/namespaces"); !slices.Equal(got, []string{"crm", "hr"}) {
		t.Errorf("namespaces %v", got)
	}
	if got := listNames(t, f, tok, "/namespaces/crm/tables"); !slices.Equal(got, []string{"accounts", "contacts"}) {
		t.Errorf("tables %v", got)
	}
	r = f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	mustStatus(t, r, 200)
	var lr loadResult
	r.JSON(t, &lr)
	if accessOf(t, f, lr) != "" {
		t.Fatalf("DESCRIBE-only principal got credentials: %+v", lr.Config)
	}
	if got := lr.Config[restcat.StorageAccessKey]; !strings.Contains(got, `lacks SELECT on table "crm.accounts" (it has DESCRIBE)`) {
		t.Errorf("%s = %q", restcat.StorageAccessKey, got)
	}
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts/credentials"), nil), 403, "ForbiddenException",
		`principal "glue-federation" lacks SELECT on table "crm.accounts" (it has DESCRIBE)`)
	// Remote signing is refused the same way.
	r = f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil, "X-Iceberg-Access-Delegation", "remote-signing")
	mustStatus(t, r, 200)
	lr = loadResult{}
	r.JSON(t, &lr)
	if lr.Config["s3.signer.uri"] != "" || lr.Config["token"] != "" {
		t.Errorf("DESCRIBE-only principal got a signer: %+v", lr.Config)
	}
	// Writes are refused too.
	wantErr(t, f.DoAs(t, tok, "POST", f.P("/namespaces/crm/tables/accounts"),
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`), 403, "ForbiddenException",
		`principal "glue-federation" lacks MODIFY on table "crm.accounts" (it has DESCRIBE)`)

	// SELECT on one table: read-only credentials for it, none for the others.
	grant(t, f, authz.Grant{Grantee: authz.Principal("glue-federation"), Privilege: authz.Select,
		On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})})
	r = f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil)
	mustStatus(t, r, 200)
	lr = loadResult{}
	r.JSON(t, &lr)
	if accessOf(t, f, lr) == "" {
		t.Fatalf("SELECT principal got no credentials: %+v", lr.Config)
	}
	sess := resolve(t, f, lr)
	if len(sess.Grants) != 1 || sess.Grants[0].Access != vend.Read || sess.Principal != "glue-federation" {
		t.Errorf("vended session %+v, want read-only for glue-federation", sess)
	}
	r = f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/contacts"), nil)
	mustStatus(t, r, 200)
	lr = loadResult{}
	r.JSON(t, &lr)
	if accessOf(t, f, lr) != "" {
		t.Error("credentials vended for a table without SELECT")
	}
}

// resolve looks up what vended credentials may do.
func resolve(t *testing.T, f *testkit.Floe, lr loadResult) vend.Session {
	t.Helper()
	em, ok := f.App.Minter().(*vend.Embedded)
	if !ok {
		t.Fatalf("minter is %T", f.App.Minter())
	}
	s, _, err := em.Resolve(context.Background(), lr.Config["s3.access-key-id"], lr.Config["s3.session-token"])
	if err != nil {
		t.Fatalf("resolve %+v: %v", lr.Config, err)
	}
	return s
}

func TestListingShowsOnlyWhatTheCallerMaySee(t *testing.T) {
	f := testkit.Start(t)
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		f.CreateTable(t, "crm", n)
	}
	f.CreateTable(t, "hr", "people")
	tok := principal(t, f, "bi")
	for _, n := range []string{"b", "d", "f", "g"} {
		grant(t, f, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select,
			On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: n})})
	}
	// No DESCRIBE on the namespace: only the tables it holds privileges on,
	// paged without short pages.
	var got []string
	path := "/namespaces/crm/tables?pageSize=2"
	pages := 0
	for {
		r := f.DoAs(t, tok, "GET", f.P(path), nil)
		mustStatus(t, r, 200)
		var out struct {
			Identifiers []struct{ Name string } `json:"identifiers"`
			Next        *string                 `json:"next-page-token"`
		}
		r.JSON(t, &out)
		pages++
		if out.Next != nil && len(out.Identifiers) != 2 {
			t.Errorf("short page %v", out.Identifiers)
		}
		for _, id := range out.Identifiers {
			got = append(got, id.Name)
		}
		if out.Next == nil {
			break
		}
		path = "/namespaces/crm/tables?pageSize=2&pageToken=" + *out.Next
	}
	if !slices.Equal(got, []string{"b", "d", "f", "g"}) || pages != 2 {
		t.Errorf("listed %v in %d pages", got, pages)
	}
	// Namespaces: none visible without a grant on them.
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces"), nil), 403, "ForbiddenException", "lacks DESCRIBE on warehouse")
	grant(t, f, authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Describe, On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"crm"})})
	if got := listNames(t, f, tok, "/namespaces"); !slices.Equal(got, []string{"crm"}) {
		t.Errorf("namespaces %v", got)
	}
	// DESCRIBE on the namespace lists every table in it.
	if got := listNames(t, f, tok, "/namespaces/crm/tables"); len(got) != 7 {
		t.Errorf("tables with DESCRIBE on crm: %v", got)
	}
	// A namespace that does not exist is not revealed to whoever may not see it.
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/ghost/tables"), nil), 403, "ForbiddenException", `lacks DESCRIBE on namespace "ghost"`)
}

func TestTagGrantCoversTablesCreatedLater(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	f.CreateTable(t, "sales", "orders")
	tok := principal(t, f, "analyst")
	wh := f.Warehouse
	if err := f.App.Authz().CreateRole(ctx, authz.RoleInfo{Name: "analysts"}); err != nil {
		t.Fatal(err)
	}
	if err := f.App.Authz().AddMember(ctx, "analysts", "analyst"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []authz.Privilege{authz.Describe, authz.Select} {
		grant(t, f, authz.Grant{Grantee: authz.Role("analysts"), Privilege: p, On: authz.Warehouse(wh),
			TagExpr: "domain = sales AND sensitivity = low"})
	}
	salesNS := authz.TagTarget{On: authz.NamespaceOf(wh, catalog.Namespace{"sales"})}
	if err := f.App.Authz().SetTags(ctx, salesNS, map[string]string{"domain": "sales", "sensitivity": "low"}); err != nil {
		t.Fatal(err)
	}
	// A table created after the grant and the tags is covered by inheritance.
	f.CreateTable(t, "sales", "leads")
	r := f.DoAs(t, tok, "GET", f.P("/namespaces/sales/tables/leads"), nil)
	mustStatus(t, r, 200)
	var lr loadResult
	r.JSON(t, &lr)
	if lr.Config["s3.access-key-id"] == "" {
		t.Fatalf("tag-based SELECT gave no credentials: %+v", lr.Config)
	}
	if got := listNames(t, f, tok, "/namespaces/sales/tables"); !slices.Equal(got, []string{"leads", "orders"}) {
		t.Errorf("tables %v", got)
	}
	// A lower level overrides: a sensitive table is not covered.
	f.CreateTable(t, "sales", "salaries")
	if err := f.App.Authz().SetTags(ctx, authz.TagTarget{On: authz.Table(wh, catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "salaries"})},
		map[string]string{"sensitivity": "high"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/sales/tables/salaries"), nil), 403, "ForbiddenException",
		`principal "analyst" lacks DESCRIBE on table "sales.salaries"`)
	// Revoking membership takes effect on the next request.
	if err := f.App.Authz().RemoveMember(ctx, "analysts", "analyst"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/sales/tables/leads"), nil), 403, "ForbiddenException", "lacks DESCRIBE")
}

func TestDataFilterRefusesFileAccess(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"crm"}}), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/crm/tables"), map[string]any{"name": "accounts",
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},` +
			`{"id":2,"name":"region","required":false,"type":"string"},{"id":3,"name":"email","required":false,"type":"string"}]}`)}), 200)
	tok := principal(t, f, "eu-analyst")
	grant(t, f, authz.Grant{Grantee: authz.Principal("eu-analyst"), Privilege: authz.Select,
		On:     authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"}),
		Filter: &authz.DataFilter{RowFilter: "region = 'EU'", ExcludeColumns: []string{"email"}}})
	r := f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil)
	mustStatus(t, r, 200)
	var lr loadResult
	r.JSON(t, &lr)
	if accessOf(t, f, lr) != "" {
		t.Fatalf("filtered principal got credentials: %+v", lr.Config)
	}
	if lr.Config["s3.access-key-id"] == "" || !strings.Contains(resolve(t, f, lr).Notice, "SQL endpoint at "+f.App.SQLAddr()) {
		t.Errorf("no notice credential naming the SQL endpoint: %+v", lr.Config)
	}
	if got, want := lr.Config[restcat.ReadPathKey], "postgresql://"+f.App.SQLAddr()+"/"+f.Warehouse; got != want {
		t.Errorf("%s = %q, want %q", restcat.ReadPathKey, got, want)
	}
	msg := `principal "eu-analyst" may read table "crm.accounts" only through a data filter`
	if !strings.Contains(lr.Config[restcat.StorageAccessKey], msg) || !strings.Contains(lr.Config[restcat.StorageAccessKey], "SQL endpoint") {
		t.Errorf("%s = %q", restcat.StorageAccessKey, lr.Config[restcat.StorageAccessKey])
	}
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts/credentials"), nil), 403, "ForbiddenException", msg)
}

func TestCreatorOwnsWhatItCreates(t *testing.T) {
	f := testkit.Start(t)
	f.CreateTable(t, "crm", "accounts")
	tok := principal(t, f, "etl")
	grant(t, f, authz.Grant{Grantee: authz.Principal("etl"), Privilege: authz.CreateTable,
		On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"crm"})})
	r := f.DoAs(t, tok, "POST", f.P("/namespaces/crm/tables"), createTableBody("staging", ""))
	mustStatus(t, r, 200)
	var lr loadResult
	r.JSON(t, &lr)
	if s := resolve(t, f, lr); s.Grants[0].Access != vend.ReadWrite {
		t.Errorf("creator got %v credentials, want read-write", s.Grants[0].Access)
	}
	mustStatus(t, f.DoAs(t, tok, "POST", f.P("/namespaces/crm/tables/staging"),
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`), 200)
	// The same principal with a read-only token gets read-only credentials.
	p, err := f.App.Store().PrincipalByName(context.Background(), "etl")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := f.App.Auth().Issue(context.Background(), p, []string{"catalog:read"})
	if err != nil {
		t.Fatal(err)
	}
	r = f.DoAs(t, tk.AccessToken, "GET", f.P("/namespaces/crm/tables/staging"), nil)
	mustStatus(t, r, 200)
	lr = loadResult{}
	r.JSON(t, &lr)
	if s := resolve(t, f, lr); s.Grants[0].Access != vend.Read {
		t.Errorf("read-only token got %v credentials", s.Grants[0].Access)
	}
	// Not the other tables of the namespace.
	wantErr(t, f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil), 403, "ForbiddenException",
		`principal "etl" lacks DESCRIBE on table "crm.accounts"`)
	// Dropping removes its grants: a new table of the same name is not the old owner's.
	mustStatus(t, f.DoAs(t, tok, "DELETE", f.P("/namespaces/crm/tables/staging"), nil), 204)
	gs, err := f.App.Authz().ListGrants(context.Background(), func(g *authz.Grant) bool { return g.On.Name == "staging" })
	if err != nil || len(gs) != 0 {
		t.Errorf("grants left on a dropped table: %v %v", gs, err)
	}
}

func TestRequestsAreAudited(t *testing.T) {
	f := testkit.Start(t)
	f.CreateTable(t, "crm", "accounts")
	tok := principal(t, f, "nosy")
	r := f.DoAs(t, tok, "GET", f.P("/namespaces/crm/tables/accounts"), nil, "X-Request-Id", "req-denied-1")
	mustStatus(t, r, 403)
	r = f.Do(t, "GET", f.P("/namespaces/crm/tables/accounts"), nil, "X-Request-Id", "req-allowed-1")
	mustStatus(t, r, 200)
	want := map[string]func(rec audit.Record) bool{
		"req-denied-1": func(rec audit.Record) bool {
			return rec.Action == "catalog.loadTable" && rec.Outcome == "denied" && rec.Principal == "nosy" &&
				rec.Resource == "table:"+f.Warehouse+"/crm.accounts" && strings.Contains(string(rec.Detail), `lacks DESCRIBE on table`)
		},
		"req-allowed-1": func(rec audit.Record) bool {
			return rec.Action == "catalog.loadTable" && rec.Outcome == "success" && rec.Principal == "admin"
		},
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		recs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if ok := want[rec.RequestID]; ok != nil && ok(rec) {
				delete(want, rec.RequestID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for id := range want {
		b, _ := json.Marshal(id)
		t.Errorf("no matching audit event for request %s", b)
	}
}
