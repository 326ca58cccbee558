package restcat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/restcat"
)

// writingForeign is a foreign catalog whose writes are on: it records the
// writes forwarded to it and the loads made with the write identity, and
// answers a write with next (or err).
type writingForeign struct {
	fakeForeign
	writable bool

	mu          sync.Mutex
	writes      []restcat.ForeignWrite
	writerLoads int
	readLoads   int
	next        []byte
	err         error
}

func (f *writingForeign) Writable() bool { return f.writable }

func (f *writingForeign) Write(_ context.Context, w restcat.ForeignWrite) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, w)
	return f.next, f.err
}

func (f *writingForeign) LoadTable(ctx context.Context, ns []string, name string, creds bool) (*restcat.ForeignTable, error) {
	f.mu.Lock()
	f.readLoads++
	f.mu.Unlock()
	return f.fakeForeign.LoadTable(ctx, ns, name, creds)
}

func (f *writingForeign) LoadTableForWrite(_ context.Context, ns []string, name string) (*restcat.ForeignTable, error) {
	f.mu.Lock()
	f.writerLoads++
	f.mu.Unlock()
	return &restcat.ForeignTable{MetadataLocation: "s3://acme/crm/" + name + "/metadata/v1.metadata.json",
		Metadata: json.RawMessage(`{"format-version":2,"table-uuid":"x"}`),
		Config:   map[string]string{"s3.access-key-id": "WRITERKEY"}}, nil
}

func (f *writingForeign) count() (writes, writerLoads, readLoads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes), f.writerLoads, f.readLoads
}

func (f *writingForeign) last() restcat.ForeignWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes[len(f.writes)-1]
}

func startWriting(t *testing.T, ff *writingForeign) *testkit.Floe {
	t.Helper()
	return testkit.Start(t, func(c *app.Config) {
		c.ForeignResolver = func(name string) restcat.Foreign {
			if name == "acme" {
				return ff
			}
			return nil
		}
	})
}

const (
	acmeTables = "/v1/acme/namespaces/crm/tables"
	createBody = `{"name":"orders","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":false}]}}`
	commitBody = `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
)

// TestForeignWritesDeniedLocally (attack): with writes on, a local
// principal without the privilege a write needs gets 403 naming the
// privilege it lacks, and the remote is never called.
func TestForeignWritesDeniedLocally(t *testing.T) {
	ff := &writingForeign{writable: true}
	f := startWriting(t, ff)
	ctx := context.Background()
	acc := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	for _, g := range []authz.Grant{
		// bob may read accounts, nothing more.
		{Grantee: authz.Principal("bob"), Privilege: authz.Select, On: acc},
		{Grantee: authz.Principal("bob"), Privilege: authz.Describe, On: acc},
	} {
		if _, err := f.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	bob := f.PrincipalToken(t, "bob")
	for _, tc := range []struct {
		method, path, body, lacks string
	}{
		{"POST", "/v1/acme/namespaces", `{"namespace":["made"]}`, "CREATE_NAMESPACE"},
		{"DELETE", "/v1/acme/namespaces/crm", "", "DROP"},
		{"POST", "/v1/acme/namespaces/crm/properties", `{"updates":{"a":"b"}}`, "ALTER"},
		{"POST", acmeTables, createBody, "CREATE_TABLE"},
		{"POST", "/v1/acme/namespaces/crm/register", `{"name":"r","metadata-location":"s3://x/m.json"}`, "CREATE_TABLE"},
		{"POST", acmeTables + "/accounts", commitBody, "MODIFY"},
		{"DELETE", acmeTables + "/accounts", "", "DROP"},
		{"POST", "/v1/acme/tables/rename", `{"source":{"namespace":["crm"],"name":"accounts"},"destination":{"namespace":["crm"],"name":"a2"}}`, "DROP"},
		{"POST", "/v1/acme/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["crm"],"name":"accounts"},` + commitBody[1:] + `]}`, "MODIFY"},
	} {
		r := f.DoAs(t, bob, tc.method, tc.path, tc.body)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "lacks "+tc.lacks) {
			t.Errorf("bob %s %s: %d %s, want 403 naming %s", tc.method, tc.path, r.Status, r.Body, tc.lacks)
		}
	}
	if n, _, _ := ff.count(); n != 0 {
		t.Fatalf("the remote was called %d times for writes Floe denied", n)
	}
	// An oversized body is refused before anything is forwarded.
	big := `{"namespace":["x"],"properties":{"p":"` + strings.Repeat("a", restcat.DefaultMaxBodyBytes) + `"}}`
	if r := f.Do(t, "POST", "/v1/acme/namespaces", big); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "larger than") {
		t.Errorf("oversized body: %d %.200s", r.Status, r.Body)
	}
	// Malformed writes are refused before anything is forwarded.
	for _, tc := range [][3]string{
		{"POST", "/v1/acme/namespaces", `{"namespace":[]}`},
		{"POST", "/v1/acme/namespaces", `{"namespace":["a\u001fb"]}`},
		{"POST", acmeTables, `{"name":"t"}`},
		{"POST", acmeTables, `{"name":"","schema":{"type":"struct","fields":[]}}`},
		{"POST", acmeTables + "/accounts", `{"identifier":{"namespace":["crm"],"name":"other"},"requirements":[],"updates":[]}`},
		{"POST", acmeTables + "/accounts", `not json`},
		{"DELETE", acmeTables + "/accounts?purgeRequested=maybe", ""},
		{"POST", "/v1/acme/transactions/commit", `{"table-changes":[{"requirements":[],"updates":[]}]}`},
	} {
		if r := f.Do(t, tc[0], tc[1], tc[2]); r.Status != http.StatusBadRequest {
			t.Errorf("%s %s %s: %d %s, want 400", tc[0], tc[1], tc[2], r.Status, r.Body)
		}
	}
	// Views are not forwarded, even for an administrator.
	if r := f.Do(t, "POST", "/v1/acme/namespaces/crm/views", `{}`); r.Status != http.StatusForbidden {
		t.Errorf("createView: %d %s", r.Status, r.Body)
	}
	if n, _, _ := ff.count(); n != 0 {
		t.Fatalf("the remote was called %d times", n)
	}
}

// TestForeignWritesForwarded: with writes on, a principal holding the
// privileges has each write forwarded with its body unchanged to the
// remote path of the spec, the remote's errors come back with their
// meaning (409 CommitFailedException, 500 CommitStateUnknownException),
// the creator owns the table it created in Floe, and only a caller who
// may write a table's files loads it with the write identity's
// credentials: a SELECT-only caller never gets them.
func TestForeignWritesForwarded(t *testing.T) {
	ff := &writingForeign{writable: true}
	f := startWriting(t, ff)
	ctx := context.Background()
	ns := authz.NamespaceOf("acme", catalog.Namespace{"crm"})
	acc := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	for _, g := range []authz.Grant{
		{Grantee: authz.Principal("wendy"), Privilege: authz.CreateTable, On: ns},
		{Grantee: authz.Principal("wendy"), Privilege: authz.Describe, On: acc},
		{Grantee: authz.Principal("wendy"), Privilege: authz.Select, On: acc},
		{Grantee: authz.Principal("wendy"), Privilege: authz.Modify, On: acc},
		{Grantee: authz.Principal("rita"), Privilege: authz.Describe, On: acc},
		{Grantee: authz.Principal("rita"), Privilege: authz.Select, On: acc},
	} {
		if _, err := f.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	wc := f.NewPrincipal(t, "wendy")
	wendy, rita := f.TokenFor(t, wc.ClientID, wc.Secret), f.PrincipalToken(t, "rita")

	// The config advertises the forwarded writes, and no view write.
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	f.DoAs(t, wendy, "GET", "/v1/config?warehouse=acme", nil).JSON(t, &cfg)
	joined := strings.Join(cfg.Endpoints, "\n")
	if !strings.Contains(joined, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}") ||
		!strings.Contains(joined, "POST /v1/{prefix}/transactions/commit") || strings.Contains(joined, "POST /v1/{prefix}/namespaces/{namespace}/views") {
		t.Errorf("endpoints %v", cfg.Endpoints)
	}

	// createTable: forwarded as is, with delegation asked; wendy then owns
	// crm.orders in Floe and gets the write identity's credentials.
	ff.next = []byte(`{"metadata-location":"s3://acme/crm/orders/metadata/v0.json","metadata":{"format-version":2,"table-uuid":"u"},"config":{"s3.access-key-id":"WRITERKEY"}}`)
	r := f.DoAs(t, wendy, "POST", acmeTables, createBody)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "WRITERKEY") {
		t.Fatalf("createTable: %d %s", r.Status, r.Body)
	}
	w := ff.last()
	if w.Operation != "createTable" || w.Method != "POST" || w.Path != "namespaces/crm/tables" || string(w.Body) != createBody || !w.Delegate ||
		len(w.Touched) != 1 || w.Touched[0].Name != "orders" {
		t.Fatalf("forwarded %+v", w)
	}
	// She owns it in Floe: she may commit to it, which no grant gave her.
	ff.next = []byte(`{"metadata-location":"s3://acme/crm/orders/metadata/v1.json","metadata":{"format-version":2,"table-uuid":"u"}}`)
	if r := f.DoAs(t, wendy, "POST", acmeTables+"/orders", commitBody); r.Status != http.StatusOK {
		t.Errorf("wendy's commit to the table she created: %d %s", r.Status, r.Body)
	}
	if r := f.DoAs(t, rita, "POST", acmeTables+"/orders", commitBody); r.Status != http.StatusForbidden {
		t.Errorf("rita's commit to wendy's table: %d %s", r.Status, r.Body)
	}

	// commitTable: the path, the body, a commit; the remote's answer comes back.
	ff.next = []byte(`{"metadata-location":"s3://acme/crm/accounts/metadata/v2.json","metadata":{"format-version":2,"table-uuid":"u"}}`)
	r = f.DoAs(t, wendy, "POST", acmeTables+"/accounts", commitBody)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "v2.json") {
		t.Fatalf("commitTable: %d %s", r.Status, r.Body)
	}
	if w := ff.last(); w.Path != "namespaces/crm/tables/accounts" || !w.Commit || string(w.Body) != commitBody {
		t.Fatalf("forwarded %+v", w)
	}
	// The remote's errors keep their meaning.
	for _, tc := range []struct {
		err    error
		status int
		typ    string
	}{
		{floe.E(floe.Conflict, "", "foreign catalog acme answered commitTable with HTTP 409: Requirement failed"), 409, "CommitFailedException"},
		{floe.E(floe.Indeterminate, "", "foreign catalog acme did not answer commitTable"), 500, "CommitStateUnknownException"},
		{floe.E(floe.NotFound, "table", "table crm.accounts does not exist in foreign catalog acme"), 404, "NoSuchTableException"},
		{floe.E(floe.Unavailable, "", "foreign catalog acme is unavailable: connection refused"), 503, "ServiceUnavailableException"},
	} {
		ff.err = tc.err
		r = f.DoAs(t, wendy, "POST", acmeTables+"/accounts", commitBody)
		if r.Status != tc.status || !strings.Contains(string(r.Body), tc.typ) || !strings.Contains(string(r.Body), "acme") {
			t.Errorf("remote %v: %d %s", tc.err, r.Status, r.Body)
		}
	}
	ff.err = nil

	// Loads: wendy (SELECT and MODIFY) gets the write identity's
	// credentials, rita (SELECT only) the read identity's, never the
	// writer's.
	_, wl0, rl0 := ff.count()
	var lr struct {
		Config map[string]string `json:"config"`
	}
	f.DoAs(t, wendy, "GET", acmeTables+"/accounts", nil).JSON(t, &lr)
	if lr.Config["s3.access-key-id"] != "WRITERKEY" {
		t.Errorf("wendy's load: %v", lr.Config)
	}
	for _, p := range []string{acmeTables + "/accounts", acmeTables + "/accounts/credentials"} {
		r := f.DoAs(t, rita, "GET", p, nil)
		if r.Status != http.StatusOK || strings.Contains(string(r.Body), "WRITERKEY") || !strings.Contains(string(r.Body), "REMOTEKEY") {
			t.Errorf("rita GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	_, wl, rl := ff.count()
	if wl-wl0 != 1 || rl-rl0 != 2 {
		t.Errorf("loads with the write identity %d (want 1), with the read identity %d (want 2)", wl-wl0, rl-rl0)
	}
	// A read-only token of wendy's is a read-only caller: the read identity.
	ro := f.TokenScoped(t, wc.ClientID, wc.Secret, "catalog:read")
	if r := f.DoAs(t, ro, "GET", acmeTables+"/accounts", nil); strings.Contains(string(r.Body), "WRITERKEY") {
		t.Errorf("a catalog:read token got the writer's credentials: %s", r.Body)
	}
	if r := f.DoAs(t, ro, "POST", acmeTables+"/accounts", commitBody); r.Status != http.StatusForbidden {
		t.Errorf("a catalog:read token committed: %d %s", r.Status, r.Body)
	}

	// Writes off: every write refused, nothing forwarded, reads unchanged.
	ff.writable = false
	n0, _, _ := ff.count()
	if r := f.DoAs(t, wendy, "POST", acmeTables+"/accounts", commitBody); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "read-only") {
		t.Errorf("writes off: %d %s", r.Status, r.Body)
	}
	if r := f.DoAs(t, wendy, "GET", acmeTables+"/accounts", nil); strings.Contains(string(r.Body), "WRITERKEY") {
		t.Errorf("writes off, wendy got the writer's credentials: %s", r.Body)
	}
	if n, _, _ := ff.count(); n != n0 {
		t.Errorf("writes off, %d writes forwarded", n-n0)
	}
}
