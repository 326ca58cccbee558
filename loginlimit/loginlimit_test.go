package loginlimit

import (
	"fmt"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestLimiter covers the burst, the refill, the per-key independence and
// the first-refusal report.
func TestLimiter(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(Options{PerMinute: 3, Now: c.now})
	for i := range 3 {
		if _, _, blocked := l.Blocked("a"); blocked {
			t.Fatalf("blocked after %d failures", i)
		}
		l.Fail("a")
	}
	retry, first, blocked := l.Blocked("a")
	if !blocked || !first || retry <= 0 || retry > 20*time.Second {
		t.Fatalf("after 3 failures: retry %v first %v blocked %v", retry, first, blocked)
	}
	if _, first, blocked := l.Blocked("a"); !blocked || first {
		t.Errorf("second refusal: first %v blocked %v", first, blocked)
	}
	if _, _, blocked := l.Blocked("b"); blocked {
		t.Error("another key is blocked")
	}
	if _, _, blocked := l.Blocked("b", "a"); !blocked {
		t.Error("a set of keys with a blocked one is not blocked")
	}
	c.t = c.t.Add(21 * time.Second)
	if _, _, blocked := l.Blocked("a"); blocked {
		t.Error("still blocked after a token refilled")
	}
	l.Fail("a")
	if _, _, blocked := l.Blocked("a"); !blocked {
		t.Error("not blocked after using the refilled token")
	}
	if New(Options{PerMinute: 0}) != nil || New(Options{PerMinute: -1}) != nil {
		t.Error("no limit should be a nil Limiter")
	}
	var none *Limiter
	none.Fail("a")
	if _, _, blocked := none.Blocked("a"); blocked || none.Keys() != 0 {
		t.Error("a nil Limiter blocked")
	}
}

// TestLimiterMaxKeys fills the limiter past MaxKeys: it never holds more,
// refilled buckets go first, and the newest failures still count.
func TestLimiterMaxKeys(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(Options{PerMinute: 2, MaxKeys: 10, Now: c.now})
	for i := range 5 {
		l.Fail(fmt.Sprint("old", i))
	}
	c.t = c.t.Add(time.Minute) // the old buckets refill
	for i := range 100 {
		k := fmt.Sprint("new", i)
		l.Fail(k, k)
		if n := l.Keys(); n > 10 {
			t.Fatalf("%d keys held, want at most 10", n)
		}
		if _, _, blocked := l.Blocked(k); !blocked {
			t.Fatalf("%s not blocked after its failures", k)
		}
	}
}
