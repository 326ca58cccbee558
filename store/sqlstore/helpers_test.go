package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PGEnv names the environment variable with the DSN of a PostgreSQL server
// (any database on it) that the tests may create and drop schemas on.
const PGEnv = "FLOE_TEST_PG_DSN"

// PGSkipMessage is why the PostgreSQL tests skip when PGEnv is unset.
const PGSkipMessage = "*** PostgreSQL store tests SKIPPED: " + PGEnv + " is not set. " +
	"Run store/sqlstore/testdata/start-postgres.sh and export the DSN it prints, e.g. " +
	PGEnv + "=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable ***"

// testPGDSN returns the PostgreSQL server DSN, or skips t.
func testPGDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PGEnv)
	if dsn == "" {
		t.Skip(PGSkipMessage)
	}
	return dsn
}

// freshPostgres creates an empty schema on the server of dsn, drops it when
// t ends, and returns a DSN whose search_path is that schema.
func freshPostgres(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", PGEnv, err)
	}
	admin := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { admin.Close() })
	schema := "floe_test_" + randomHex(t)
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
		t.Fatalf("parse %s: %v", PGEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func randomHex(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// openForTest opens a store on dsn and closes it when t ends.
func openForTest(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// backend is a database the tests run on.
type backend struct {
	name string
	// dsn returns the DSN of a new, empty database.
	dsn func(t testing.TB) string
}

// backends returns SQLite and, when PGEnv is set, PostgreSQL.
func backends() []backend {
	return []backend{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "floe.db") }},
		{"postgres", func(t testing.TB) string { return freshPostgres(t, testPGDSN(t)) }},
	}
}

// db exposes the write pool to tests.
func (s *Store) db() *sql.DB { return s.wdb }
