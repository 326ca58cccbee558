package federation_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// remoteWithAccounts starts the remote catalog (another Floe) with
// crm.accounts holding ids 1-5.
func remoteWithAccounts(t *testing.T) *testkit.Floe {
	t.Helper()
	ctx := t.Context()
	remote := testkit.Start(t)
	cat, err := rest.NewCatalog(ctx, "remote", remote.URL, rest.WithCredential(remote.Cred.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"crm"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"crm", "accounts"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendIDs(ctx, tbl, 1, 2, 3, 4, 5); err != nil {
		t.Fatal(err)
	}
	return remote
}

// TestEndToEndRuntimeCatalog: a foreign catalog created through the
// management API, with the remote's client secret in the body, is served
// at once by the node that answered and within the refresh bound by
// another node on the same store; iceberg-go reads a remote table through
// it with only a local credential; the secret is nowhere in the SQLite
// files in clear; after a drop both nodes answer 404 for the warehouse.
func TestEndToEndRuntimeCatalog(t *testing.T) {
	ctx := context.Background()
	remote := remoteWithAccounts(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "floe.db")
	// Nodes of one cluster: one store, one key to seal its secrets.
	onStore := func(c *app.Config) {
		c.Store = dbPath
		c.EncryptionKey = "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
	}
	local := testkit.Start(t, onStore)
	other := testkit.Start(t, onStore) // a second node of the same cluster

	// Floe's identity in the remote: a principal of its own (its secret
	// is random, unlike the test nodes' bootstrap credentials).
	p, secret, err := remote.App.Auth().CreatePrincipal(ctx, "federator", nil, true, "", "")
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"name": "acme", "uri": remote.URL, "warehouse": remote.Warehouse, "auth": "oauth2",
		"client_id": p.ClientID, "client_secret": secret}
	if r := local.Do(t, "POST", "/api/v1/catalogs", body); r.Status != http.StatusCreated || strings.Contains(string(r.Body), secret) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	read := func(f *testkit.Floe) []int64 {
		t.Helper()
		cat, err := rest.NewCatalog(ctx, "local", f.URL, rest.WithCredential(f.Cred.String()), rest.WithWarehouseLocation("acme"))
		if err != nil {
			t.Fatalf("catalog acme: %v", err)
		}
		tbl, err := cat.LoadTable(ctx, table.Identifier{"crm", "accounts"})
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		return ids(t, tbl)
	}
	if got := read(local); len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("rows through the foreign catalog: %v", got)
	}

	// The other node serves it within the refresh bound (5 s).
	waitStatus := func(f *testkit.Floe, want int) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			r := f.Do(t, "GET", "/v1/config?warehouse=acme", nil)
			if r.Status == want {
				return time.Since(start)
			}
			if time.Since(start) > 8*time.Second {
				t.Fatalf("GET /v1/config?warehouse=acme on %s: %d %s, want %d", f.URL, r.Status, r.Body, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if d := waitStatus(other, http.StatusOK); d > 6*time.Second {
		t.Fatalf("the other node served the catalog after %s", d)
	}
	if got := read(other); len(got) != 5 {
		t.Fatalf("rows through the other node: %v", got)
	}

	// The secret is sealed at rest: not in the database files in clear.
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if p == dbPath && len(b) == 0 {
			t.Fatalf("%s is empty", p)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("the client secret is in %s in clear", p)
		}
	}
	rec, err := local.App.Store().ForeignCatalog(ctx, "acme")
	if err != nil || len(rec.SealedSecret) == 0 {
		t.Fatalf("stored record %+v %v", rec, err)
	}

	// Drop: the warehouse is 404 at once here, within the bound there.
	if r := local.Do(t, "DELETE", "/api/v1/catalogs/acme", nil); r.Status != http.StatusNoContent {
		t.Fatalf("drop: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"/v1/config?warehouse=acme", "/v1/acme/namespaces/crm/tables/accounts"} {
		if r := local.Do(t, "GET", p, nil); r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), "NoSuchWarehouseException") {
			t.Fatalf("after the drop, %s: %d %s", p, r.Status, r.Body)
		}
	}
	if d := waitStatus(other, http.StatusNotFound); d > 6*time.Second {
		t.Fatalf("the other node stopped serving after %s", d)
	}
}
