package vend_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/vend"
)

// TestSQLStore runs several nodes on one real store (SQLite, and PostgreSQL
// when FLOE_TEST_PG_DSN is set): they start at once on one key, resolve
// each other's credentials and follow a rotation.
func TestSQLStore(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "floe.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			clock := fakeclock.New(t0)
			nodes := make([]*vend.Embedded, 3)
			var wg sync.WaitGroup
			for i := range nodes {
				// Each node has its own connection to the database.
				s, err := sqlstore.Open(t.Context(), dsn, sqlstore.Options{Now: clock.Now})
				must(t, err)
				t.Cleanup(func() { s.Close() })
				wg.Go(func() { nodes[i] = newEmbedded(t, s, clock, 0) })
			}
			wg.Wait()
			s, err := sqlstore.Open(t.Context(), dsn, sqlstore.Options{Now: clock.Now})
			must(t, err)
			t.Cleanup(func() { s.Close() })
			keys, err := s.VendKeys(t.Context())
			must(t, err)
			if len(keys) != 1 {
				t.Fatalf("%d keys after three nodes started, want 1", len(keys))
			}
			for i, a := range nodes {
				c, _ := mint(t, a, session(), 0)
				resolve(t, nodes[(i+1)%len(nodes)], c)
			}

			clock.Advance(vend.DefaultKeyRotation)
			c, minted := mint(t, nodes[0], session(), vend.MaxTTL)
			if keyIDOf(t, c.SessionToken) == keys[0].ID {
				t.Fatal("no rotation")
			}
			for _, n := range nodes[1:] {
				if got := resolve(t, n, c); got.ID != minted.ID {
					t.Errorf("resolved %+v, want %+v", got, minted)
				}
			}
			clock.Advance(vend.DefaultKeyRotation + time.Hour)
			mint(t, nodes[1], session(), 0)
			keys, err = s.VendKeys(t.Context())
			must(t, err)
			if len(keys) != 2 {
				t.Errorf("%d keys after two rotations, want 2 (the first deleted)", len(keys))
			}
		})
	}
}
