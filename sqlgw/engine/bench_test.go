package engine_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
)

// BenchmarkPointQueries runs point queries from 64 concurrent pgx clients
// (a pool of 64 connections) against a 10,000-row table; it reports q/s and
// the process's CPU time per query. "kept" is the default configuration
// (each session keeps the small table's rows decoded); the "files" variants
// turn that off and read the Parquet file at every query: as written, after
// a rename of a column the query does not read (the file is then read
// through read_parquet's field-id schema map), and with one DuckDB thread
// per session.
func BenchmarkPointQueries(b *testing.B) {
	for _, v := range []struct {
		name                       string
		threads                    int
		renamed, noCache, filtered bool
	}{
		{name: "kept"}, // the default: the table's rows kept in each session
		// A principal with a data filter (row filter and excluded column).
		{name: "kept/filtered", filtered: true},
		{name: "files", noCache: true},                        // read from the Parquet file every time
		{name: "files/renamed", noCache: true, renamed: true}, // through the field-id schema map
		{name: "files/threads=1", noCache: true, threads: 1},
	} {
		b.Run(v.name, func(b *testing.B) { benchPoint(b, v.threads, v.renamed, v.noCache, v.filtered) })
	}
}

func benchPoint(b *testing.B, threads int, renamed, noCache, filtered bool) {
	e := newEnv(b, func(c *app.Config) {
		c.SQLThreads = threads
		if noCache {
			c.SQLTableCacheBytes = -1
		}
	})
	tbl := e.createPeople(b, "bench", "people")
	tbl = appendPeople(b, tbl, people(10000)...)
	if renamed {
		renameColumn(b, tbl, "ssn", "tax_id")
	}
	user, token := "admin", e.f.Token(b)
	if filtered {
		user = "filtered"
		e.f.NewPrincipal(b, user)
		id := catalog.Ident{Namespace: catalog.Namespace{"bench"}, Name: "people"}
		if _, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(user), Privilege: authz.Select,
			On: authz.Table(e.f.Warehouse, id), Filter: &authz.DataFilter{RowFilter: "region <> 'none'", ExcludeColumns: []string{"ssn"}}}); err != nil {
			b.Fatal(err)
		}
		p, err := e.f.App.Store().PrincipalByName(context.Background(), user)
		if err != nil {
			b.Fatal(err)
		}
		tok, err := e.f.App.Auth().Issue(context.Background(), p, []string{"catalog"})
		if err != nil {
			b.Fatal(err)
		}
		token = tok.AccessToken
	}
	cfg, err := pgxpool.ParseConfig("postgres://" + user + ":" + token + "@" + e.f.SQLAddr + "/floe?sslmode=disable&pool_max_conns=64&pool_min_conns=64")
	if err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	// Warm up: open all 64 sessions (each has its own DuckDB database).
	conns := make([]*pgxpool.Conn, 64)
	for i := range conns {
		if conns[i], err = pool.Acquire(context.Background()); err != nil {
			b.Fatal(err)
		}
		var name string
		if err := conns[i].QueryRow(context.Background(), "SELECT name FROM bench.people WHERE id = $1", int64(i+1)).Scan(&name); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Release()
	}
	var n atomic.Int64
	b.SetParallelism(64) // 64 goroutines per GOMAXPROCS: at least 64 clients
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := n.Add(1)%10000 + 1
			var name string
			if err := pool.QueryRow(context.Background(), "SELECT name FROM bench.people WHERE id = $1", id).Scan(&name); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "q/s")
	// CPU per query (client and server: they share the process) is what
	// bounds throughput on a loaded machine, where q/s mostly measures the
	// other load.
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/q")
}

// processCPU is the user plus system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkViewPointQuery compares, in one run and on one connection, a
// point query on a 10,000-row table with the same query through an
// invoker-rights view of it and through a definer-rights view read by a
// principal with SELECT on the view alone.
func BenchmarkViewPointQuery(b *testing.B) {
	e := newEnv(b)
	appendPeople(b, e.createPeople(b, "bench", "people"), people(10000)...)
	wh := e.f.Warehouse
	ctx := context.Background()
	grant := func(p string, priv authz.Privilege, on authz.Securable) {
		if _, err := e.f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(p), Privilege: priv, On: on}); err != nil {
			b.Fatal(err)
		}
	}
	bench := catalog.Namespace{"bench"}
	grant("owner", authz.CreateView, authz.NamespaceOf(wh, bench))
	grant("owner", authz.Select, authz.Table(wh, catalog.Ident{Namespace: bench, Name: "people"}))
	owner := e.connect(b, "owner", e.issue(b, "owner"))
	for _, q := range []string{
		"CREATE VIEW bench.v AS SELECT id, name, region FROM bench.people",
		"CREATE VIEW bench.dv SECURITY DEFINER AS SELECT id, name, region FROM bench.people",
	} {
		if _, err := owner.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	for _, v := range []struct{ name, user, from string }{
		{"table", "owner", "bench.people"},
		{"view", "owner", "bench.v"},
		{"definer-view", "reader", "bench.dv"},
	} {
		if v.user == "reader" {
			grant("reader", authz.Select, authz.View(wh, catalog.Ident{Namespace: bench, Name: "dv"}))
		}
		c := e.connect(b, v.user, e.issue(b, v.user))
		q := "SELECT name FROM " + v.from + " WHERE id = $1"
		b.Run(v.name, func(b *testing.B) {
			var name string
			for i := 0; b.Loop(); i++ {
				if err := c.QueryRow(ctx, q, int64(i%10000+1)).Scan(&name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// issue returns a catalog token for principal name, created if needed.
func (e *env) issue(b *testing.B, name string) string {
	b.Helper()
	ctx := context.Background()
	p, err := e.f.App.Store().PrincipalByName(ctx, name)
	if err != nil {
		e.f.NewPrincipal(b, name)
		if p, err = e.f.App.Store().PrincipalByName(ctx, name); err != nil {
			b.Fatal(err)
		}
	}
	tok, err := e.f.App.Auth().Issue(ctx, p, []string{"catalog"})
	if err != nil {
		b.Fatal(err)
	}
	return tok.AccessToken
}
