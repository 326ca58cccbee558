package sqlstore

import (
	"context"
)

// ReplaceSigningKey sets the stored (sealed) private key of signing key kid
// to new if it is still old, and reports whether it did: the compare and
// swap with which nodes re-wrap keys at rest without losing one.
func (s *Store) ReplaceSigningKey(ctx context.Context, kid string, old, new []byte) (bool, error) {
	return s.replaceBlob(ctx, "replace signing key", "UPDATE signing_keys SET private_pem = ? WHERE kid = ? AND private_pem = ?", kid, old, new)
}

// ReplaceVendKey sets the stored (sealed) secret of vend key id to new if it
// is still old, and reports whether it did (see ReplaceSigningKey).
func (s *Store) ReplaceVendKey(ctx context.Context, id string, old, new []byte) (bool, error) {
	return s.replaceBlob(ctx, "replace vend key", "UPDATE vend_keys SET secret = ? WHERE id = ? AND secret = ?", id, old, new)
}

func (s *Store) replaceBlob(ctx context.Context, op, q, id string, old, new []byte) (bool, error) {
	var n int64
	err := s.write(ctx, op, func(c conn) error {
		var err error
		n, err = c.exec(ctx, q, new, id, old)
		return err
	})
	return n == 1, err
}

// ScrubKeyTables removes the old versions of rows of the key tables that
// the database keeps after an update (free pages and the write-ahead log on
// SQLite, dead tuples on PostgreSQL), so that no plaintext key survives in
// the database files once the keys are sealed. It rewrites the database
// (SQLite) or the two key tables (PostgreSQL), so call it only when
// plaintext keys were just sealed. Backups taken before still hold them.
func (s *Store) ScrubKeyTables(ctx context.Context) error {
	stmts := []string{"VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"}
	if s.d.name == DialectPostgres {
		stmts = []string{"VACUUM FULL signing_keys, vend_keys"}
	}
	for _, q := range stmts {
		if _, err := s.wdb.ExecContext(ctx, q); err != nil {
			return s.fail("scrub key tables", err)
		}
	}
	return nil
}
