package federation_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// switchProxy forwards to a remote Floe while up; while down it drops every
// connection, as a stopped server would.
type switchProxy struct {
	down  atomic.Bool
	proxy *httputil.ReverseProxy
}

func (p *switchProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.down.Load() {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// sqlFederation starts a remote Floe holding crm.accounts (ids 1-5) and
// crm.secret, and a local Floe federating it as "acme" through a proxy
// that can be switched off, with no metadata cache (every query asks the
// remote), and a local table sales.orders.
func sqlFederation(t *testing.T) (local *testkit.Floe, proxy *switchProxy) {
	t.Helper()
	remote := seedFloe(t, "crm", "accounts", "secret")
	target, err := url.Parse(remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy = &switchProxy{proxy: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	env := map[string]string{"ACME_SECRET": remote.Cred.Secret}
	local = testkit.Start(t, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: front.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET", CacheTTL: -1}}
	})
	admin := sqlConn(t, local, "admin", local.Token(t))
	for _, q := range []string{
		"CREATE SCHEMA sales",
		"CREATE TABLE sales.orders (account_id BIGINT, amount BIGINT)",
		"INSERT INTO sales.orders VALUES (1, 10), (2, 20), (2, 25), (7, 70)",
	} {
		if _, err := admin.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return local, proxy
}

func sqlConn(t *testing.T, f *testkit.Floe, user, token string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, token), Host: f.SQLAddr, Path: "/" + f.Warehouse, RawQuery: "sslmode=disable"}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// pairs runs q and returns its rows of two integers.
func pairs(t *testing.T, c *pgx.Conn, q string) ([][2]int64, error) {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	var out [][2]int64
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			return nil, err
		}
		out = append(out, [2]int64{a, b})
	}
	return out, rows.Err()
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

const joinQuery = `SELECT a.id, sum(o.amount) FROM acme.crm.accounts a JOIN sales.orders o ON a.id = o.account_id GROUP BY a.id ORDER BY a.id`

// TestEndToEndSQLForeignTables: Floe's SQL endpoint reads a table of a
// foreign catalog in place and joins it with a local table; Floe's grants
// and data filters govern it as a local one; it is read-only; a remote
// outage is SQLSTATE 08001 naming the catalog, the session stays usable
// and reads resume when the remote is back.
func TestEndToEndSQLForeignTables(t *testing.T) {
	ctx := context.Background()
	local, proxy := sqlFederation(t)
	admin := sqlConn(t, local, "admin", local.Token(t))

	got, err := pairs(t, admin, joinQuery)
	if err != nil || len(got) != 2 || got[0] != [2]int64{1, 10} || got[1] != [2]int64{2, 45} {
		t.Fatalf("join of a foreign and a local table: %v, %v", got, err)
	}

	// Grants: SELECT on the local table only refuses the foreign one,
	// naming the privilege; a filtered SELECT on the foreign one sees
	// only its rows.
	tokens := map[string]string{}
	for _, name := range []string{"orders_only", "filtered"} {
		tokens[name] = local.PrincipalToken(t, name)
		r := local.Do(t, "POST", "/api/v1/grants", map[string]any{"grantee": map[string]any{"kind": "principal", "name": name},
			"privilege": "SELECT", "on": map[string]any{"kind": "table", "warehouse": local.Warehouse, "namespace": []string{"sales"}, "name": "orders"}})
		if r.Status/100 != 2 {
			t.Fatalf("grant to %s: %d %s", name, r.Status, r.Body)
		}
	}
	r := local.Do(t, "POST", "/api/v1/grants", map[string]any{"grantee": map[string]any{"kind": "principal", "name": "filtered"},
		"privilege": "SELECT", "on": map[string]any{"kind": "table", "warehouse": "acme", "namespace": []string{"crm"}, "name": "accounts"},
		"filter": map[string]any{"row_filter": "id >= 2"}})
	if r.Status/100 != 2 {
		t.Fatalf("filtered grant: %d %s", r.Status, r.Body)
	}

	ordersOnly := sqlConn(t, local, "orders_only", tokens["orders_only"])
	if _, err := pairs(t, ordersOnly, joinQuery); pgCode(err) != "42501" || !strings.Contains(err.Error(), "SELECT") {
		t.Fatalf("without SELECT on the foreign table: %v", err)
	}
	if _, err := pairs(t, ordersOnly, "SELECT id, id FROM acme.crm.secret"); pgCode(err) != "42501" {
		t.Fatalf("another foreign table without a grant: %v", err)
	}
	filtered := sqlConn(t, local, "filtered", tokens["filtered"])
	got, err = pairs(t, filtered, joinQuery)
	if err != nil || len(got) != 1 || got[0] != [2]int64{2, 45} {
		t.Fatalf("filtered join: %v, %v", got, err)
	}

	// Audit: the remote calls the filtered principal's query made carry
	// its name and token id; the refused principal made none.
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := local.App.Store().AuditRecords(ctx, 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		filteredCalls, refusedCalls, queries := 0, 0, 0
		for _, rec := range recs {
			switch {
			case rec.Action == "federation.remote.loadTable" && rec.Principal == "filtered" && strings.Contains(string(rec.Detail), `"token_id":"`):
				filteredCalls++
			case strings.HasPrefix(rec.Action, "federation.remote.") && rec.Principal == "orders_only":
				refusedCalls++
			case rec.Action == "sql.query" && rec.Principal == "filtered" && strings.Contains(string(rec.Detail), "acme.crm.accounts"):
				queries++
			}
		}
		if refusedCalls != 0 {
			t.Fatalf("%d remote calls for a principal refused SELECT", refusedCalls)
		}
		if filteredCalls > 0 && queries > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit: %d remote calls and %d queries of the filtered principal", filteredCalls, queries)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Read-only: DML and DDL on the foreign catalog are refused.
	for _, q := range []string{
		"INSERT INTO acme.crm.accounts VALUES (9)",
		"DELETE FROM acme.crm.accounts WHERE id = 1",
		"CREATE TABLE acme.crm.made_here (id BIGINT)",
		"DROP TABLE acme.crm.accounts",
	} {
		if _, err := admin.Exec(ctx, q); pgCode(err) != "42501" || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got, err := pairs(t, admin, "SELECT count(*), max(id) FROM acme.crm.accounts"); err != nil || got[0] != [2]int64{5, 5} {
		t.Fatalf("the foreign table after refused writes: %v, %v", got, err)
	}

	// Outage: 08001 naming the catalog, quickly; the session and local
	// tables keep working; reads resume when the remote is back.
	proxy.down.Store(true)
	start := time.Now()
	_, err = pairs(t, admin, joinQuery)
	if pgCode(err) != "08001" || !strings.Contains(err.Error(), "acme") {
		t.Fatalf("remote down: %v", err)
	}
	if d := time.Since(start); d > 12*time.Second {
		t.Fatalf("the outage took %s to answer", d)
	}
	if got, err := pairs(t, admin, "SELECT count(*), sum(amount) FROM sales.orders"); err != nil || got[0] != [2]int64{4, 125} {
		t.Fatalf("local table during the outage: %v, %v", got, err)
	}
	if r := local.Do(t, "GET", "/v1/acme/namespaces/crm/tables/accounts", nil); r.Status != http.StatusServiceUnavailable ||
		!strings.Contains(string(r.Body), "acme") {
		t.Fatalf("REST loadTable during the outage: %d %s", r.Status, r.Body)
	}
	proxy.down.Store(false)
	if got, err := pairs(t, admin, joinQuery); err != nil || len(got) != 2 {
		t.Fatalf("after the remote is back: %v, %v", got, err)
	}
	if r := local.Do(t, "GET", "/v1/acme/namespaces/crm/tables/accounts", nil); r.Status != http.StatusOK {
		t.Fatalf("REST loadTable after the remote is back: %d %s", r.Status, r.Body)
	}
}
