package restcat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/restcat"
)

// fakeForeign is a foreign catalog with crm.accounts and crm.secret (and
// view crm.v); down makes every call Unavailable; withCreds counts loads
// that asked for credentials.
type fakeForeign struct {
	down      atomic.Bool
	withCreds atomic.Int64
}

func (f *fakeForeign) err() error {
	if f.down.Load() {
		return floe.E(floe.Unavailable, "", "foreign catalog acme is unavailable: connection refused")
	}
	return nil
}

func (f *fakeForeign) ListNamespaces(context.Context, []string) ([][]string, error) {
	return [][]string{{"crm"}}, f.err()
}

func (f *fakeForeign) LoadNamespace(_ context.Context, ns []string) (map[string]string, error) {
	if len(ns) != 1 || ns[0] != "crm" {
		return nil, floe.E(floe.NotFound, "namespace", "Namespace does not exist in foreign catalog acme: %v", ns)
	}
	return map[string]string{"owner": "acme"}, f.err()
}

func (f *fakeForeign) ListTables(context.Context, []string) ([]catalog.Ident, error) {
	return []catalog.Ident{{Namespace: catalog.Namespace{"crm"}, Name: "secret"}, {Namespace: catalog.Namespace{"crm"}, Name: "accounts"}}, f.err()
}

func (f *fakeForeign) ListViews(context.Context, []string) ([]catalog.Ident, error) {
	return []catalog.Ident{{Namespace: catalog.Namespace{"crm"}, Name: "v"}}, f.err()
}

func (f *fakeForeign) LoadTable(_ context.Context, ns []string, name string, creds bool) (*restcat.ForeignTable, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	if name != "accounts" && name != "secret" {
		return nil, floe.E(floe.NotFound, "table", "Table does not exist in foreign catalog acme: %s", name)
	}
	t := &restcat.ForeignTable{MetadataLocation: "s3://acme/crm/" + name + "/metadata/v1.metadata.json",
		Metadata: json.RawMessage(`{"format-version":2,"table-uuid":"x"}`), Config: map[string]string{}}
	if creds {
		f.withCreds.Add(1)
		t.Config["s3.access-key-id"] = "REMOTEKEY"
		t.StorageCredentials = []restcat.ForeignCredential{{Prefix: "s3://acme/crm/" + name, Config: map[string]string{"s3.access-key-id": "REMOTEKEY"}}}
	}
	return t, nil
}

func (f *fakeForeign) LoadView(_ context.Context, ns []string, name string) (*restcat.ForeignView, error) {
	return &restcat.ForeignView{Metadata: json.RawMessage(`{"view-uuid":"v"}`)}, f.err()
}

// TestForeignCatalog: a foreign catalog served as warehouse acme is read
// through the remote and judged by Floe's grants: listings filtered,
// DESCRIBE for metadata, SELECT without a filter for the remote's
// credentials, every write refused, an outage a 503 naming it.
func TestForeignCatalog(t *testing.T) {
	ff := &fakeForeign{}
	f := testkit.Start(t, func(c *app.Config) {
		c.ForeignResolver = func(name string) restcat.Foreign {
			if name == "acme" {
				return ff
			}
			return nil
		}
	})
	ctx := context.Background()
	acc := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	for _, g := range []authz.Grant{
		{Grantee: authz.Principal("bob"), Privilege: authz.Select, On: acc},
		{Grantee: authz.Principal("bob"), Privilege: authz.Describe, On: acc},
		{Grantee: authz.Principal("carol"), Privilege: authz.Describe, On: acc},
		{Grantee: authz.Principal("erin"), Privilege: authz.Describe, On: acc},
		{Grantee: authz.Principal("erin"), Privilege: authz.Select, On: acc, Filter: &authz.DataFilter{RowFilter: "id > 1"}},
	} {
		if _, err := f.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	tok := map[string]string{"admin": f.Token(t)}
	for _, n := range []string{"bob", "carol", "dave", "erin"} {
		tok[n] = f.PrincipalToken(t, n)
	}
	type lr struct {
		Config             map[string]string `json:"config"`
		StorageCredentials []any             `json:"storage-credentials"`
		Overrides          map[string]string `json:"overrides"`
		Endpoints          []string          `json:"endpoints"`
	}
	get := func(who, path string) (testkit.Response, lr) {
		r := f.DoAs(t, tok[who], "GET", path, nil)
		var out lr
		if r.Status == 200 && strings.HasPrefix(strings.TrimSpace(string(r.Body)), "{") {
			r.JSON(t, &out)
		}
		return r, out
	}
	const tables = "/v1/acme/namespaces/crm/tables"
	tests := []struct {
		who, path string
		status    int
		check     func(testkit.Response, lr) string
	}{
		{"admin", "/v1/config?warehouse=acme", 200, func(r testkit.Response, o lr) string {
			for _, e := range o.Endpoints {
				if strings.HasPrefix(e, "POST") && !strings.Contains(e, "metrics") {
					return "a write endpoint advertised: " + e
				}
			}
			if o.Overrides["prefix"] != "acme" {
				return "prefix " + o.Overrides["prefix"]
			}
			return ""
		}},
		{"admin", "/v1/acme/namespaces", 200, nil},
		{"admin", tables, 200, nil},
		{"admin", tables + "/accounts", 200, func(r testkit.Response, o lr) string {
			if o.Config["s3.access-key-id"] != "REMOTEKEY" || len(o.StorageCredentials) != 1 {
				return "the admin got no credentials"
			}
			return ""
		}},
		{"bob", tables, 200, func(r testkit.Response, o lr) string {
			if strings.Contains(string(r.Body), "secret") || !strings.Contains(string(r.Body), "accounts") {
				return "bob's listing is not filtered"
			}
			return ""
		}},
		{"bob", tables + "/accounts", 200, func(r testkit.Response, o lr) string {
			if o.Config["s3.access-key-id"] != "REMOTEKEY" {
				return "bob (SELECT) got no credentials"
			}
			return ""
		}},
		{"bob", tables + "/accounts/credentials", 200, nil},
		{"bob", tables + "/secret", 403, nil},
		{"bob", "/v1/acme/namespaces/crm/views/v", 403, nil},
		{"carol", tables + "/accounts", 200, func(r testkit.Response, o lr) string {
			if o.Config["s3.access-key-id"] != "" || len(o.StorageCredentials) != 0 || !strings.Contains(o.Config["floe.credentials"], "SELECT") {
				return "carol (DESCRIBE only) got credentials or no note"
			}
			return ""
		}},
		{"carol", tables + "/accounts/credentials", 403, nil},
		{"erin", tables + "/accounts", 200, func(r testkit.Response, o lr) string {
			if o.Config["s3.access-key-id"] != "" {
				return "erin (SELECT with a row filter) got file credentials"
			}
			return ""
		}},
		{"dave", tables, 403, nil},
		{"dave", "/v1/acme/namespaces", 403, nil},
		{"dave", tables + "/accounts", 403, nil},
		{"admin", tables + "/nope", 404, nil},
		{"admin", "/v1/acme/namespaces/hr", 404, nil},
	}
	for _, tt := range tests {
		r, o := get(tt.who, tt.path)
		if r.Status != tt.status {
			t.Errorf("%s GET %s: %d %s, want %d", tt.who, tt.path, r.Status, r.Body, tt.status)
			continue
		}
		if tt.check != nil {
			if msg := tt.check(r, o); msg != "" {
				t.Errorf("%s GET %s: %s: %s", tt.who, tt.path, msg, r.Body)
			}
		}
	}
	before := ff.withCreds.Load()
	get("carol", tables+"/accounts")
	if ff.withCreds.Load() != before {
		t.Error("the remote was asked for credentials for a caller without SELECT")
	}
	for _, w := range [][2]string{{"POST", "/v1/acme/namespaces"}, {"POST", tables}, {"POST", tables + "/accounts"},
		{"DELETE", tables + "/accounts"}, {"POST", "/v1/acme/tables/rename"}, {"POST", tables + "/accounts/sign"},
		{"POST", "/v1/acme/namespaces/crm/views"}, {"POST", "/v1/acme/transactions/commit"}} {
		r := f.DoAs(t, tok["admin"], w[0], w[1], `{}`)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "foreign catalog") {
			t.Errorf("admin %s %s: %d %s", w[0], w[1], r.Status, r.Body)
		}
	}
	ff.down.Store(true)
	if r, _ := get("admin", tables+"/accounts"); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "acme") {
		t.Fatalf("remote down: %d %s", r.Status, r.Body)
	}
	if r, _ := get("admin", f.P("/namespaces")); r.Status != 200 {
		t.Fatalf("the local warehouse while the remote is down: %d %s", r.Status, r.Body)
	}
}
