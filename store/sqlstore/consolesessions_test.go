package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/websession"
)

// TestConsoleSessions: sessions are found by their key until they expire;
// the bound evicts expired ones first, then the one expiring first, and
// returns the evicted; deleting returns the row once. Two stores on one
// database (two nodes) see each other's sessions, and concurrent sign-ins
// on both keep the bound.
func TestConsoleSessions(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			var nowNanos atomic.Int64
			nowNanos.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
			now := func() time.Time { return time.Unix(0, nowNanos.Load()).UTC() }
			dsn := b.dsn(t)
			s := openForTest(t, dsn, Options{Now: now})
			other := openForTest(t, dsn, Options{Now: now})
			sess := func(i int, ttl time.Duration) websession.Session {
				return websession.Session{IDHash: fmt.Sprintf("h%03d", i), Principal: "p", SealedToken: "sealed", TokenID: fmt.Sprintf("jti%d", i),
					ClientID: "c", PrincipalID: "pid", ExpiresAt: now().Add(ttl), CreatedAt: now()}
			}
			for i := range 3 {
				ev, err := s.CreateConsoleSession(ctx, sess(i, time.Duration(10+i)*time.Minute), 3)
				if err != nil || len(ev) != 0 {
					t.Fatalf("create %d: %v, evicted %v", i, err, ev)
				}
			}
			got, err := other.ConsoleSession(ctx, "h001")
			if err != nil || got.TokenID != "jti1" || !got.ExpiresAt.Equal(now().Add(11*time.Minute)) || got.SealedToken != "sealed" {
				t.Fatalf("the other node reads %+v, %v", got, err)
			}
			// Full: the one expiring first (h000) is evicted, on the other node.
			ev, err := other.CreateConsoleSession(ctx, sess(3, 30*time.Minute), 3)
			if err != nil || len(ev) != 1 || ev[0].IDHash != "h000" || ev[0].TokenID != "jti0" {
				t.Fatalf("create over the bound: %v, evicted %+v", err, ev)
			}
			if _, err := s.ConsoleSession(ctx, "h000"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("evicted session: %v, want NotFound", err)
			}
			// Expired sessions are not found, and are deleted (not evicted
			// as live ones) by the next sign-in.
			nowNanos.Add(int64(12 * time.Minute)) // h001 (11 min) expired, h002 (12 min) expires now
			if _, err := s.ConsoleSession(ctx, "h001"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("expired session: %v, want NotFound", err)
			}
			if _, err := s.ConsoleSession(ctx, "h002"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("session at its expiry: %v, want NotFound", err)
			}
			ev, err = s.CreateConsoleSession(ctx, sess(4, 10*time.Minute), 3)
			if err != nil || len(ev) != 0 {
				t.Fatalf("create after expiry: %v, evicted %+v (want the expired pruned, none evicted)", err, ev)
			}
			var n int
			if err := s.read().queryRow(ctx, "SELECT COUNT(*) FROM console_sessions").Scan(&n); err != nil || n != 2 {
				t.Fatalf("%d rows after pruning (%v), want 2", n, err)
			}
			// Delete on one node, gone on the other at once.
			d, err := other.DeleteConsoleSession(ctx, "h003")
			if err != nil || d.TokenID != "jti3" {
				t.Fatalf("delete: %+v, %v", d, err)
			}
			if _, err := s.ConsoleSession(ctx, "h003"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("deleted session on the other node: %v", err)
			}
			if _, err := s.DeleteConsoleSession(ctx, "h003"); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("delete twice: %v, want NotFound", err)
			}
			// Concurrent sign-ins on both nodes keep the bound together.
			const max = 5
			var wg sync.WaitGroup
			var evicted atomic.Int64
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					node := s
					if i%2 == 1 {
						node = other
					}
					ev, err := node.CreateConsoleSession(ctx, sess(100+i, time.Duration(20+i)*time.Minute), max)
					if err != nil {
						t.Errorf("concurrent create: %v", err)
					}
					evicted.Add(int64(len(ev)))
				}()
			}
			wg.Wait()
			if err := s.read().queryRow(ctx, "SELECT COUNT(*) FROM console_sessions").Scan(&n); err != nil || n != max {
				t.Fatalf("%d sessions after 40 concurrent sign-ins (%v), want the bound %d", n, err, max)
			}
			if evicted.Load() != 1+40-max { // h004 and the 40, less the 5 kept
				t.Fatalf("%d evicted, want %d", evicted.Load(), 1+40-max)
			}
		})
	}
}
