// Package pgtest gives tests a fresh PostgreSQL schema on the server named
// by FLOE_TEST_PG_DSN, or skips them loudly when it is unset.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Env names the environment variable with the DSN of a PostgreSQL server
// (any database on it) on which tests may create and drop schemas.
const Env = "FLOE_TEST_PG_DSN"

// SkipMessage is why PostgreSQL tests skip when Env is unset.
const SkipMessage = "*** PostgreSQL tests SKIPPED: " + Env + " is not set. " +
	"Run store/sqlstore/testdata/start-postgres.sh and export the DSN it prints, e.g. " +
	Env + "=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable ***"

// ServerDSN returns the PostgreSQL server DSN, or skips t.
func ServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(Env)
	if dsn == "" {
		t.Skip(SkipMessage)
	}
	return dsn
}

// Fresh creates an empty schema on the server of dsn, drops it when t ends,
// and returns a DSN whose search_path is that schema.
func Fresh(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", Env, err)
	}
	admin := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "floe_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
