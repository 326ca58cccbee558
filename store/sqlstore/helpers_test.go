package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/internal/pgtest"
)

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

// backends returns SQLite and, when pgtest.Env is set, PostgreSQL.
func backends() []backend {
	return []backend{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "floe.db") }},
		{"postgres", func(t testing.TB) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
	}
}

// db exposes the write pool to tests.
func (s *Store) db() *sql.DB { return s.wdb }
