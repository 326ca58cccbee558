package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	floe "github.com/floe-lake/floe"
	"github.com/floe-lake/floe/federation/remote"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestEndToEndFloe points a Client, with OAuth2 client credentials, at a
// real Floe's Iceberg REST catalog: it lists and loads namespaces, tables
// (with and without vended credentials) and views, maps missing objects to
// NotFound, and reports the stopped server as Unavailable within the
// client timeout.
func TestEndToEndFloe(t *testing.T) {
	ctx := context.Background()
	f := testkit.Start(t)
	f.CreateTable(t, "sales", "orders")
	if r := f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"sales", "emea"}, "properties": map[string]string{"owner": "ops"}}); r.Status != 200 {
		t.Fatalf("create nested namespace: %d %s", r.Status, r.Body)
	}
	if r := f.Do(t, "POST", f.P("/namespaces/sales%1Femea/tables"), map[string]any{"name": "leads",
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`)}); r.Status != 200 {
		t.Fatalf("create nested table: %d %s", r.Status, r.Body)
	}
	view := fmt.Sprintf(`{"name":"recent","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]},
	 "view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["sales"],
	 "representations":[{"type":"sql","sql":"select id from orders","dialect":"spark"}]},"properties":{}}`, time.Now().UnixMilli())
	if r := f.Do(t, "POST", f.P("/namespaces/sales/views"), view); r.Status != 200 {
		t.Fatalf("create view: %d %s", r.Status, r.Body)
	}

	var calls []remote.Call
	c, err := remote.New(remote.Options{Name: "upstream", URI: f.URL, Warehouse: f.Warehouse,
		Auth:  remote.Auth{Kind: "oauth2", ClientID: f.Cred.ClientID, ClientSecret: f.Cred.Secret},
		Audit: func(_ context.Context, c remote.Call) { calls = append(calls, c) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if p, err := c.Prefix(ctx); err != nil || p != f.Warehouse {
		t.Fatalf("prefix %q, %v", p, err)
	}
	nss, err := c.ListNamespaces(ctx, nil)
	if err != nil || fmt.Sprint(nss) != "[[sales]]" {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	if nss, err = c.ListNamespaces(ctx, []string{"sales"}); err != nil || fmt.Sprint(nss) != "[[sales emea]]" {
		t.Fatalf("child namespaces %v, %v", nss, err)
	}
	if props, err := c.LoadNamespace(ctx, []string{"sales", "emea"}); err != nil || props["owner"] != "ops" {
		t.Fatalf("namespace properties %v, %v", props, err)
	}
	ids, err := c.ListTables(ctx, []string{"sales", "emea"})
	if err != nil || len(ids) != 1 || ids[0].String() != "sales.emea.leads" {
		t.Fatalf("tables %v, %v", ids, err)
	}
	if ids, err = c.ListViews(ctx, []string{"sales"}); err != nil || len(ids) != 1 || ids[0].Name != "recent" {
		t.Fatalf("views %v, %v", ids, err)
	}

	withCreds, err := c.LoadTable(ctx, []string{"sales"}, "orders", true)
	if err != nil {
		t.Fatal(err)
	}
	if withCreds.Config["s3.access-key-id"] == "" || withCreds.Config["s3.session-token-expires-at-ms"] == "" ||
		len(withCreds.StorageCredentials) == 0 || !strings.Contains(string(withCreds.Metadata), `"table-uuid"`) ||
		!strings.HasPrefix(withCreds.MetadataLocation, "s3://") || withCreds.ETag == "" {
		t.Fatalf("load with credentials %+v", withCreds)
	}
	plain, err := c.LoadTable(ctx, []string{"sales", "emea"}, "leads", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Config) != 0 || len(plain.StorageCredentials) != 0 || !strings.Contains(string(plain.Metadata), `"table-uuid"`) {
		t.Fatalf("describe-only load %+v", plain)
	}
	v, err := c.LoadView(ctx, []string{"sales"}, "recent")
	if err != nil || !strings.Contains(string(v.Metadata), "select id from orders") {
		t.Fatalf("view %+v, %v", v, err)
	}

	for _, tc := range []struct {
		name   string
		call   func() error
		entity string
	}{
		{"table", func() error { _, err := c.LoadTable(ctx, []string{"sales"}, "ghost", true); return err }, "table"},
		{"view", func() error { _, err := c.LoadView(ctx, []string{"sales"}, "ghost"); return err }, "view"},
		{"namespace", func() error { _, err := c.LoadNamespace(ctx, []string{"ghost"}); return err }, "namespace"},
		{"tables of a missing namespace", func() error { _, err := c.ListTables(ctx, []string{"ghost"}); return err }, "namespace"},
	} {
		err := tc.call()
		if floe.KindOf(err) != floe.NotFound || floe.EntityOf(err) != tc.entity ||
			!strings.Contains(floe.PublicMessage(err), "does not exist in foreign catalog upstream") {
			t.Errorf("%s: %v (kind %v entity %q)", tc.name, err, floe.KindOf(err), floe.EntityOf(err))
		}
	}
	for _, cl := range calls {
		if cl.Catalog != "upstream" || cl.Status == 0 || strings.Contains(fmt.Sprint(cl), f.Cred.Secret) {
			t.Fatalf("audit call %+v", cl)
		}
	}

	// A wrong secret: the remote refuses Floe's credentials → Unavailable.
	bad, err := remote.New(remote.Options{Name: "upstream", URI: f.URL, Warehouse: f.Warehouse,
		Auth: remote.Auth{Kind: "oauth2", ClientID: f.Cred.ClientID, ClientSecret: "wrong-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.ListNamespaces(ctx, nil)
	if floe.KindOf(err) != floe.Unavailable || !strings.Contains(floe.PublicMessage(err), "refused Floe's credentials") ||
		strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("wrong secret: %v", err)
	}

	// The remote stops (a proxy in front of it closes): Unavailable, within
	// the client timeout; a remote that hangs likewise.
	target, _ := url.Parse(f.URL)
	hang := make(chan struct{})
	defer close(hang)
	var hanging atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hanging.Load() {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer proxy.Close()
	hc := &http.Client{Timeout: 2 * time.Second}
	down, err := remote.New(remote.Options{Name: "upstream", URI: proxy.URL, Warehouse: f.Warehouse, HTTPClient: hc, CacheTTL: -1,
		Auth: remote.Auth{Kind: "oauth2", ClientID: f.Cred.ClientID, ClientSecret: f.Cred.Secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if _, err := down.LoadTable(ctx, []string{"sales"}, "orders", false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		stop func()
		why  string
	}{
		{"hanging", func() { hanging.Store(true) }, "timed out"},
		{"stopped", proxy.Close, "connection refused"},
	} {
		tc.stop()
		start := time.Now()
		_, err = down.LoadTable(ctx, []string{"sales"}, "orders", false)
		if floe.KindOf(err) != floe.Unavailable || !strings.Contains(floe.PublicMessage(err), "foreign catalog upstream is unavailable: ") ||
			!strings.Contains(floe.PublicMessage(err), tc.why) || time.Since(start) > 3*time.Second {
			t.Fatalf("%s remote: %v after %v", tc.name, err, time.Since(start))
		}
	}
}
