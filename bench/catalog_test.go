package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
)

const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"ts","required":false,"type":"timestamptz"},{"id":3,"name":"category","required":false,"type":"string"}]}`

// client is a plain keep-alive HTTP client sized for the benchmark's concurrency.
func client(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns*2, conns*2
	return &http.Client{Transport: tr}
}

func do(c *http.Client, tok, method, u, body string) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// storeOption selects the metadata store: SQLite by default, or a fresh
// PostgreSQL schema when FLOE_BENCH_STORE=postgres (needs FLOE_TEST_PG_DSN).
func storeOption(b *testing.B) testkit.Option {
	if os.Getenv("FLOE_BENCH_STORE") != "postgres" {
		return func(*app.Config) {}
	}
	dsn := pgtest.Fresh(b, pgtest.ServerDSN(b))
	return func(c *app.Config) { c.Store = dsn }
}

func setup(b *testing.B, ns string, tables int) (*testkit.Floe, string, *http.Client) {
	b.Helper()
	f := testkit.Start(b, storeOption(b))
	tok := f.Token(b)
	c := client(64)
	createTables(b, f, c, tok, ns, tables)
	return f, tok, c
}

func createTables(b *testing.B, f *testkit.Floe, c *http.Client, tok, ns string, tables int) {
	b.Helper()
	if st, err := do(c, tok, "POST", f.URL+f.P("/namespaces"), `{"namespace":["`+ns+`"]}`); err != nil || st != 200 {
		b.Fatalf("namespace: %d %v", st, err)
	}
	for i := 0; i < tables; i++ {
		body := fmt.Sprintf(`{"name":"t%d","schema":%s,"partition-spec":{"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"day"}]}}`, i, schema)
		if st, err := do(c, tok, "POST", f.URL+f.P("/namespaces/"+ns+"/tables"), body); err != nil || st != 200 {
			b.Fatalf("create table: %d %v", st, err)
		}
	}
}

// run spreads b.N calls over `workers` goroutines and reports ops/s and
// latency percentiles.
func run(b *testing.B, workers int, op func(w, i int) error) {
	b.Helper()
	lat := make([][]time.Duration, workers)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := op(w, i); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}

// BenchmarkLoadTable: 32 concurrent clients loading tables over loopback HTTP
// with authentication on and SQLite metadata.
func BenchmarkLoadTable(b *testing.B) {
	f, tok, c := setup(b, "load", 8)
	run(b, 32, func(w, i int) error {
		st, err := do(c, tok, "GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}

// BenchmarkLoadTableTwoNodes spreads the same 32 clients over two Floe nodes
// sharing one PostgreSQL store (FLOE_TEST_PG_DSN must be set).
func BenchmarkLoadTableTwoNodes(b *testing.B) {
	dsn := pgtest.Fresh(b, pgtest.ServerDSN(b))
	shared := b.TempDir()
	opt := func(c *app.Config) { c.Store, c.DataDir, c.PublicURL = dsn, shared, "http://floe.bench.test" }
	n1, n2 := testkit.Start(b, opt), testkit.Start(b, opt)
	c := client(64)
	tok := n1.Token(b)
	createTables(b, n1, c, tok, "load", 8)
	urls := []string{n1.URL, n2.URL}
	run(b, 32, func(w, i int) error {
		st, err := do(c, tok, "GET", urls[w%2]+n1.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8)), "")
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}

// BenchmarkCommitDistinctTables: 16 writers, each committing set-properties
// updates to its own table (each commit writes and fsyncs a metadata file and
// swaps the pointer in SQLite).
func BenchmarkCommitDistinctTables(b *testing.B) {
	const writers = 16
	f, tok, c := setup(b, "commit", writers)
	run(b, writers, func(w, i int) error {
		body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"n":"%d"}}]}`, i)
		st, err := do(c, tok, "POST", f.URL+f.P(fmt.Sprintf("/namespaces/commit/tables/t%d", w)), body)
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}

// BenchmarkListTablesPage lists one page of 100 from a namespace holding
// 100,000 tables, at several depths, to show that page latency stays flat.
// The pointers are created directly in the store (listing reads only the store).
func BenchmarkListTablesPage(b *testing.B) {
	const total = 100_000
	f := testkit.Start(b)
	tok := f.Token(b)
	c := client(4)
	ctx := context.Background()
	st := f.App.Store()
	wh := f.Warehouse
	if err := f.App.Catalog().CreateNamespace(ctx, wh, catalog.Namespace{"big"}, nil); err != nil {
		b.Fatal(err)
	}
	swaps := make([]catalog.Swap, 0, 1000)
	for i := 0; i < total; i++ {
		swaps = append(swaps, catalog.Swap{Warehouse: wh, Ident: catalog.Ident{Namespace: catalog.Namespace{"big"}, Name: fmt.Sprintf("t%06d", i)},
			Kind: catalog.KindTable, New: fmt.Sprintf("file:///nowhere/t%06d/metadata/00000-x.metadata.json", i)})
		if len(swaps) == cap(swaps) {
			if err := st.SwapPointers(ctx, swaps); err != nil {
				b.Fatal(err)
			}
			swaps = swaps[:0]
		}
	}
	for _, depth := range []int{0, 25_000, 50_000, 75_000, 99_900} {
		b.Run(fmt.Sprintf("after=%d", depth), func(b *testing.B) {
			token := ""
			if depth > 0 {
				token = "&pageToken=" + url.QueryEscape(encodeToken(fmt.Sprintf("t%06d", depth-1)))
			}
			u := f.URL + f.P("/namespaces/big/tables?pageSize=100"+token)
			run(b, 1, func(_, _ int) error {
				s, err := do(c, tok, "GET", u, "")
				if err == nil && s != 200 {
					err = fmt.Errorf("status %d", s)
				}
				return err
			})
		})
	}
}

// BenchmarkLoadTableAuthz is BenchmarkLoadTable for a non-admin principal
// whose SELECT comes through a role's AllTables grant, with 10,000 other
// grants and 1,000 tags in the store: every request loads the policy
// version, checks DESCRIBE, and decides the vended credentials' access.
func BenchmarkLoadTableAuthz(b *testing.B) {
	f, _, c := setup(b, "load", 8)
	ctx := context.Background()
	az := f.App.Authz()
	seedAuthz(b, f)
	p, secret, err := f.App.Auth().CreatePrincipal(ctx, "reader", nil, false, "", "")
	if err != nil {
		b.Fatal(err)
	}
	if err := az.CreateRole(ctx, authz.RoleInfo{Name: "readers"}); err != nil {
		b.Fatal(err)
	}
	if err := az.AddMember(ctx, "readers", "reader"); err != nil {
		b.Fatal(err)
	}
	if _, err := az.Grant(ctx, authz.Grant{Grantee: authz.Role("readers"), Privilege: authz.Select,
		On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"load"}), AllTables: true}); err != nil {
		b.Fatal(err)
	}
	tok := f.TokenFor(b, p.ClientID, secret)
	pol, err := az.Policy(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("policy: %s", pol)
	run(b, 32, func(w, i int) error {
		st, err := do(c, tok, "GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}

// seedAuthz stores 10,000 grants (500 principals in 50 roles, on tables,
// namespaces, AllTables and tag expressions) and 1,000 tags on 250
// namespaces, none of which concern the benchmark's principal.
func seedAuthz(b *testing.B, f *testkit.Floe) {
	b.Helper()
	ctx := context.Background()
	az := f.App.Authz()
	wh := f.Warehouse
	for i := range 50 {
		if err := az.CreateRole(ctx, authz.RoleInfo{Name: fmt.Sprintf("role-%02d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	privs := []authz.Privilege{authz.Describe, authz.Select, authz.Modify, authz.Drop}
	var gs []authz.Grant
	for i := 0; len(gs) < 10_000; i++ {
		ns := catalog.Namespace{fmt.Sprintf("ns%03d", i%250)}
		gr := authz.Principal(fmt.Sprintf("principal-%03d", i%500))
		if i%5 == 0 {
			gr = authz.Role(fmt.Sprintf("role-%02d", i%50))
		}
		g := authz.Grant{Grantee: gr, Privilege: privs[i%len(privs)], On: authz.Table(wh, catalog.Ident{Namespace: ns, Name: fmt.Sprintf("t%d", i)})}
		switch i % 10 {
		case 7:
			g.On, g.AllTables = authz.NamespaceOf(wh, ns), true
		case 8:
			g.On, g.TagExpr = authz.Warehouse(wh), fmt.Sprintf("domain = d%d AND sensitivity IN (low, medium) AND tier != x%d", i%25, i)
			g.Privilege = authz.Select
		case 9:
			g.On, g.Privilege = authz.NamespaceOf(wh, ns), authz.Describe
		}
		g.ID = g.Key()
		gs = append(gs, g)
	}
	if err := f.App.Store().PutGrants(ctx, gs); err != nil {
		b.Fatal(err)
	}
	for i := range 250 {
		t := authz.TagTarget{On: authz.NamespaceOf(wh, catalog.Namespace{fmt.Sprintf("ns%03d", i)})}
		if err := az.SetTags(ctx, t, map[string]string{"domain": fmt.Sprintf("d%d", i%25), "sensitivity": "low",
			"owner": fmt.Sprintf("team%d", i%7), "tier": "gold"}); err != nil {
			b.Fatal(err)
		}
	}
}
