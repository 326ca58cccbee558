package federation_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkLoadTable times, in one run, over HTTP with the admin's token:
// a local loadTable (remote Floe's own table, on the remote), a federated
// loadTable through a Floe whose client cache is warm ("federated-warm",
// the target: >= 0.8x of local) and one with no cache
// ("federated-cold": every load goes to the remote; target <= 1.2x the
// remote's own latency + 1 ms). Each load asks for credentials (the admin
// may read files), as engines do.
func BenchmarkLoadTable(b *testing.B) {
	remote, _, _ := remoteFloe(b)
	env := map[string]string{"ACME_SECRET": remote.Cred.Secret}
	cold := testkit.Start(b, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: remote.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET", CacheTTL: -1}}
	})
	warm := testkit.Start(b, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: remote.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET", CacheTTL: time.Hour}}
	})
	client := &http.Client{}
	cases := []struct {
		name string
		f    *testkit.Floe
		path string
	}{
		{"local", remote, remote.P("/namespaces/crm/tables/accounts")},
		{"federated-warm", warm, "/v1/acme/namespaces/crm/tables/accounts"},
		{"federated-cold", cold, "/v1/acme/namespaces/crm/tables/accounts"},
	}
	for _, c := range cases {
		tok := c.f.Token(b)
		get := func(b *testing.B) { mustOK(b, client, tok, "GET", c.f.URL+c.path, "") }
		b.Run(c.name, func(b *testing.B) {
			get(b)
			for b.Loop() {
				get(b)
			}
		})
	}
}

// BenchmarkForwardedCommit times, in one run, a commit (a set-properties
// update) sent to the remote Floe directly ("local") and the same commit
// forwarded through a Floe whose foreign catalog has writes on
// ("forwarded": Floe's privilege check, the forward with the write
// identity, the cache invalidation), both with an administrator's token.
func BenchmarkForwardedCommit(b *testing.B) {
	remote, local, _, _ := writingFederation(b)
	client := &http.Client{}
	cases := []struct {
		name string
		f    *testkit.Floe
		path string
	}{
		{"local", remote, remote.P("/namespaces/crm/tables/accounts")},
		{"forwarded", local, "/v1/acme/namespaces/crm/tables/accounts"},
	}
	for _, c := range cases {
		tok := c.f.Token(b)
		n := 0
		commit := func(b *testing.B) {
			n++
			body := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"n":"` + strconv.Itoa(n) + `"}}]}`
			mustOK(b, client, tok, "POST", c.f.URL+c.path, body)
		}
		b.Run(c.name, func(b *testing.B) {
			commit(b)
			for b.Loop() {
				commit(b)
			}
		})
	}
}

// BenchmarkSQLJoin times, in one run, the seed's join in the local Floe's
// SQL endpoint (pgx): a 1 M-row usage table joined with a local 1,000-row
// accounts table, the usage table local ("local") or the remote Floe's,
// federated as acme ("federated"; the target: within 1.5x of
// local). Both are warm: the first query reads the files.
func BenchmarkSQLJoin(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	remote := testkit.Start(b)
	writeUsage(b, remote, rows)
	env := map[string]string{"ACME_SECRET": remote.Cred.Secret}
	local := testkit.Start(b, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: remote.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET"}}
	})
	writeUsage(b, local, rows)
	u := url.URL{Scheme: "postgres", User: url.UserPassword("admin", local.Token(b)), Host: local.SQLAddr, Path: "/" + local.Warehouse, RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{"CREATE SCHEMA crm", "CREATE TABLE crm.accounts (id BIGINT, segment VARCHAR)",
		"INSERT INTO crm.accounts SELECT i, CASE WHEN i % 3 = 0 THEN 'enterprise' ELSE 'smb' END FROM (VALUES " + values(1000) + ") AS v(i)"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q[:min(len(q), 60)], err)
		}
	}
	var want int64
	query := func(usage string) string {
		return "SELECT a.segment, count(*), sum(u.v) FROM " + usage + " u JOIN crm.accounts a ON u.account_id = a.id GROUP BY a.segment ORDER BY a.segment"
	}
	run := func(b *testing.B, q string) int64 {
		rs, err := conn.Query(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		var total int64
		for rs.Next() {
			var seg string
			var n, s int64
			if err := rs.Scan(&seg, &n, &s); err != nil {
				b.Fatal(err)
			}
			total += n
		}
		if err := rs.Err(); err != nil {
			b.Fatal(err)
		}
		return total
	}
	for _, c := range []struct{ name, usage string }{{"local", "lake.usage"}, {"federated", "acme.lake.usage"}} {
		q := query(c.usage)
		b.Run(c.name, func(b *testing.B) {
			got := run(b, q)
			if want == 0 {
				want = got
			}
			if got != rows || got != want {
				b.Fatalf("%s joined %d rows, want %d", c.name, got, rows)
			}
			for b.Loop() {
				run(b, q)
			}
		})
	}
	// Both joins in turn, so that both meet the same machine: the ratio
	// is the figure.
	b.Run("alternating", func(b *testing.B) {
		var local, fed time.Duration
		for b.Loop() {
			t0 := time.Now()
			run(b, query("lake.usage"))
			t1 := time.Now()
			run(b, query("acme.lake.usage"))
			local, fed = local+t1.Sub(t0), fed+time.Since(t1)
		}
		b.ReportMetric(float64(local.Microseconds())/1000/float64(b.N), "local-ms/op")
		b.ReportMetric(float64(fed.Microseconds())/1000/float64(b.N), "federated-ms/op")
		b.ReportMetric(float64(fed)/float64(local), "federated/local")
	})
}

// values renders (0), (1), ... (n-1).
func values(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d)", i)
	}
	return sb.String()
}

// writeUsage writes lake.usage (account_id = i % 1000, v = i) of n rows to
// f with iceberg-go, in one data file.
func writeUsage(b *testing.B, f *testkit.Floe, n int) {
	b.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "seed", f.URL, rest.WithCredential(f.Cred.String()))
	if err != nil {
		b.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"lake"}, nil); err != nil {
		b.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "account_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int64})
	as := arrow.NewSchema([]arrow.Field{{Name: "account_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	for i := range n {
		rb.Field(0).(*array.Int64Builder).Append(int64(i % 1000))
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer at.Release()
	tbl, err := cat.CreateTable(ctx, table.Identifier{"lake", "usage"}, sc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tbl.AppendTable(ctx, at, int64(n), nil); err != nil {
		b.Fatal(err)
	}
}

// mustOK sends one request with a bearer token (and a JSON body, if not
// ""), failing the benchmark unless the answer is 200.
func mustOK(b *testing.B, client *http.Client, tok, method, url, body string) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s %s: %d", method, url, resp.StatusCode)
	}
}
