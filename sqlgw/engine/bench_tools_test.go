package engine_test

import (
	"context"
	"testing"
)

// BenchmarkToolsSession measures what issue 17 part B adds to a session:
// "connect" is a login with a first query (the session's database is
// attached under the warehouse's name and has more macros), "catalog" one
// catalog query of the kind tools send (pg_class joined with
// pg_namespace and pg_attribute, as psql's \d and SQLAlchemy do) on an
// open session.
func BenchmarkToolsSession(b *testing.B) {
	e := newEnv(b)
	e.createPeople(b, "crm", "people")
	e.createPeople(b, "hr", "staff")
	tok := e.f.Token(b)
	ctx := context.Background()
	b.Run("connect", func(b *testing.B) {
		for b.Loop() {
			c := e.connect(b, "admin", tok)
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				b.Fatal(err)
			}
			_ = c.Close(ctx)
		}
	})
	b.Run("catalog", func(b *testing.B) {
		c := e.connect(b, "admin", tok)
		q := "SELECT n.nspname, c.relname, a.attname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace " +
			"JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid WHERE a.attnum > 0 AND n.nspname = 'crm' ORDER BY 1, 2, a.attnum"
		for b.Loop() {
			rows, err := c.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n != 5 {
				b.Fatalf("%d rows", n)
			}
		}
	})
}
