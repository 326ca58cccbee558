package sqlstore

import (
	"context"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/vend"
)

var _ vend.KeyStore = (*Store)(nil)

// VendKeys returns the sealing keys of the embedded credential minter,
// newest first (ties by id, descending).
func (s *Store) VendKeys(ctx context.Context) ([]vend.Key, error) {
	rows, err := s.read().query(ctx, "SELECT id, secret, created_at FROM vend_keys ORDER BY created_at DESC, id DESC")
	if err != nil {
		return nil, s.fail("vend keys", err)
	}
	defer rows.Close()
	out := []vend.Key{}
	for rows.Next() {
		var k vend.Key
		var at dbTime
		if err := rows.Scan(&k.ID, &k.Secret, &at); err != nil {
			return nil, s.fail("vend keys", err)
		}
		k.Created = at.t
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("vend keys", err)
	}
	return out, nil
}

// AddVendKey stores a new sealing key: Invalid if its id is empty or its
// secret (sealed by the minter) is empty or over vend.MaxStoredSecret bytes, AlreadyExists (entity "vend key") if the
// id is taken. A zero Created is set to now. Times are kept in UTC with
// microsecond precision.
func (s *Store) AddVendKey(ctx context.Context, k vend.Key) error {
	if k.ID == "" {
		return floe.E(floe.Invalid, "vend key", "vend key id must not be empty")
	}
	if len(k.Secret) == 0 || len(k.Secret) > vend.MaxStoredSecret {
		return floe.E(floe.Invalid, "vend key", "vend key %s has %d bytes of secret, want 1 to %d", k.ID, len(k.Secret), vend.MaxStoredSecret)
	}
	if k.Created.IsZero() {
		k.Created = s.now()
	}
	return s.write(ctx, "add vend key", func(c conn) error {
		n, err := c.exec(ctx, "INSERT INTO vend_keys (id, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
			k.ID, k.Secret, s.d.timeArg(k.Created))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "vend key", "Vend key already exists: %s", k.ID)
		}
		return nil
	})
}

// DeleteVendKeysBefore removes the sealing keys created before t, except the
// newest key, and returns how many it removed.
func (s *Store) DeleteVendKeysBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "delete vend keys", func(c conn) error {
		var err error
		n, err = c.exec(ctx, `DELETE FROM vend_keys WHERE created_at < ?
			AND id NOT IN (SELECT id FROM vend_keys ORDER BY created_at DESC, id DESC LIMIT 1)`, s.d.timeArg(t))
		return err
	})
	return int(n), err
}
