package httperr

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRequestIDs: generated ids are 16 hex digits, distinct (also when the
// counter wraps), and sort by the millisecond they were made in.
func TestRequestIDs(t *testing.T) {
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	ids := NewRequestIDs(func() time.Time { return at })
	ids.n.Store(1<<24 - 3) // the counter wraps within this millisecond
	seen := map[string]bool{}
	prev := ""
	for i := range 3000 {
		if i%1000 == 999 {
			at = at.Add(time.Millisecond)
		}
		id := ids.Next()
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("id %q is not 16 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if id[:10] < prev[:min(10, len(prev))] {
			t.Fatalf("id %q made after %q sorts before it", id, prev)
		}
		prev = id
	}
	if got, want := ids.Next()[:10], fmt.Sprintf("%010x", uint64(at.UnixMilli())&(1<<40-1)); got != want {
		t.Errorf("time prefix %s, want %s (%v)", got, want, at)
	}
}
