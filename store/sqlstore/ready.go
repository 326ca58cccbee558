package sqlstore

import (
	"context"
	"fmt"
)

// Ready reports whether the store answers and its schema has every
// migration this binary knows (a database restored from an older backup
// would not): the readiness probe's store check.
func (s *Store) Ready(ctx context.Context) error {
	ms, err := migrations(s.d.name)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	var latest int
	if err := s.read().queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&latest); err != nil {
		return s.fail("ready", err)
	}
	if n := len(ms); n > 0 && latest < ms[n-1].version {
		return fmt.Errorf("sqlstore: the database schema is at migration %d, this binary needs %d", latest, ms[n-1].version)
	}
	return nil
}
