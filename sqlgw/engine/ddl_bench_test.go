package engine_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkDDL measures DDL and transaction blocks through pgx: a CREATE
// TABLE and DROP TABLE pair; a one-row INSERT into each of two tables in
// autocommit (two catalog commits); and the same two INSERTs in one
// BEGIN ... COMMIT block (one multi-table catalog commit).
func BenchmarkDDL(b *testing.B) {
	e := newEnv(b)
	e.createPeople(b, "bench", "a")
	e.createPeople(b, "bench", "b")
	c := e.connect(b, "admin", e.f.Token(b))
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	b.Run("create-drop", func(b *testing.B) {
		for i := range b.N {
			exec(fmt.Sprintf("CREATE TABLE bench.t%d (id bigint NOT NULL, name text) PARTITIONED BY (bucket(4, id))", i))
			exec(fmt.Sprintf("DROP TABLE bench.t%d", i))
		}
	})
	b.Run("two-inserts/autocommit", func(b *testing.B) {
		for i := range b.N {
			exec("INSERT INTO bench.a (id) VALUES ($1)", int64(i))
			exec("INSERT INTO bench.b (id) VALUES ($1)", int64(i))
		}
	})
	b.Run("two-inserts/block", func(b *testing.B) {
		for i := range b.N {
			exec("BEGIN")
			exec("INSERT INTO bench.a (id) VALUES ($1)", int64(i))
			exec("INSERT INTO bench.b (id) VALUES ($1)", int64(i))
			exec("COMMIT")
		}
	})
}
