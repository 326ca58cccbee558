package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migrationFiles holds migrations/<dialect>/NNN_name.sql.
//
//go:embed migrations
var migrationFiles embed.FS

// migrationLockKey is the PostgreSQL advisory lock that serializes Floe
// instances migrating the same database ("floe" in ASCII).
const migrationLockKey = 0x666c6f65

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations of a dialect in version order.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration: %w", err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("two migrations have version %d", ms[i].version)
		}
	}
	return ms, nil
}

// applyMigration applies m in c's transaction unless it was applied, with its
// row in schema_migrations.
func (s *Store) applyMigration(ctx context.Context, c conn, m migration) error {
	if s.d.name == DialectPostgres {
		if _, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(migrationLockKey)); err != nil {
			return err
		}
	}
	if _, err := c.exec(ctx, s.d.migrationsDDL); err != nil {
		return err
	}
	done, err := c.exists(ctx, "SELECT 1 FROM schema_migrations WHERE version = ?", m.version)
	if err != nil || done {
		return err
	}
	// Not rebound: migrations are dialect-specific text without parameters.
	if _, err := c.q.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %03d_%s: %w", m.version, m.name, err)
	}
	if _, err := c.exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, s.d.timeArg(s.now())); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "sqlstore: applied migration", "dialect", s.d.name, "version", m.version, "name", m.name)
	return nil
}

// migrate applies the pending migrations in order, each in one transaction
// together with its row in schema_migrations. On PostgreSQL an advisory
// transaction lock makes concurrent Opens apply each migration once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations(s.d.name)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	for _, m := range ms {
		err := s.write(ctx, "migrate", func(c conn) error { return s.applyMigration(ctx, c, m) })
		if err != nil {
			return err
		}
	}
	var latest int
	if err := s.read().queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&latest); err != nil {
		return s.fail("migrate", err)
	}
	if n := len(ms); n > 0 && latest > ms[n-1].version {
		s.log.WarnContext(ctx, "sqlstore: the database schema is newer than this binary",
			"schema_version", latest, "known_version", ms[n-1].version)
	}
	return nil
}
