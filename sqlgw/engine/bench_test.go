package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-lake/floe/internal/app"
)

// BenchmarkPointQueries runs point queries from 64 concurrent pgx clients
// (a pool of 64 connections) against a 10,000-row table; it reports q/s.
// In the renamed variant a column the query does not read was renamed
// after the rows were written, so the data file no longer has the table's
// column names and is read through read_parquet's field-id schema map
// (which DuckDB binds again at every execution) instead of by name.
func BenchmarkPointQueries(b *testing.B) {
	for _, threads := range []int{0, 1} {
		for _, renamed := range []bool{false, true} {
			name := fmt.Sprintf("threads=%d", threads)
			if renamed {
				name += "/renamed"
			}
			b.Run(name, func(b *testing.B) { benchPoint(b, threads, renamed) })
		}
	}
}

func benchPoint(b *testing.B, threads int, renamed bool) {
	e := newEnv(b, func(c *app.Config) { c.SQLThreads = threads })
	tbl := e.createPeople(b, "bench", "people")
	tbl = appendPeople(b, tbl, people(10000)...)
	if renamed {
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).RenameColumn([]string{"ssn"}, "tax_id").Commit(); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig("postgres://admin:" + e.f.Token(b) + "@" + e.f.SQLAddr + "/floe?sslmode=disable&pool_max_conns=64&pool_min_conns=64")
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
}
