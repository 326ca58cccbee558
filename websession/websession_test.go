package websession_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/websession"
)

// TestMemoryBound: expired sessions are pruned first, then the one
// expiring first is evicted and returned; expired and deleted sessions
// are not found.
func TestMemoryBound(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := websession.NewMemory(func() time.Time { return now })
	add := func(i int, ttl time.Duration) []websession.Session {
		t.Helper()
		ev, err := m.CreateConsoleSession(ctx, websession.Session{IDHash: fmt.Sprint("h", i), TokenID: fmt.Sprint("t", i), ExpiresAt: now.Add(ttl)}, 2)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	add(1, 10*time.Minute)
	add(2, 5*time.Minute)
	if ev := add(3, 20*time.Minute); len(ev) != 1 || ev[0].IDHash != "h2" {
		t.Fatalf("evicted %+v, want h2 (expiring first)", ev)
	}
	if m.Len() != 2 {
		t.Fatalf("%d held, want the bound 2", m.Len())
	}
	now = now.Add(15 * time.Minute) // h1 expired
	if _, err := m.ConsoleSession(ctx, "h1"); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("expired session: %v", err)
	}
	if ev := add(4, 10*time.Minute); len(ev) != 0 {
		t.Fatalf("evicted %+v, want none (room made by the expired one)", ev)
	}
	if _, err := m.DeleteConsoleSession(ctx, "h3"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConsoleSession(ctx, "h3"); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("deleted session: %v", err)
	}
	if s, err := m.ConsoleSession(ctx, "h4"); err != nil || s.TokenID != "t4" {
		t.Fatalf("live session: %+v, %v", s, err)
	}
}
