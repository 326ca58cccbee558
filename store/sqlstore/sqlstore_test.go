package sqlstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(pgtest.Env) == "" {
		fmt.Fprintln(os.Stderr, pgtest.SkipMessage)
	}
	os.Exit(m.Run())
}

// TestSQLite runs the conformance suite on SQLite, a new file per test.
func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts sqlstore.Options) *sqlstore.Store {
		return sqlstore.OpenForTest(t, filepath.Join(t.TempDir(), "floe.db"), opts)
	})
}

// TestPostgres runs the conformance suite on PostgreSQL when FLOE_TEST_PG_DSN
// is set, a new schema per test.
func TestPostgres(t *testing.T) {
	dsn := pgtest.ServerDSN(t)
	storetest.Run(t, func(t *testing.T, opts sqlstore.Options) *sqlstore.Store {
		return sqlstore.OpenForTest(t, pgtest.Fresh(t, dsn), opts)
	})
}
