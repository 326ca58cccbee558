package oauth

import (
	"math"
	"sync"
	"time"
)

// limiter counts failed authentication attempts in token buckets, one per
// key ("client:<id>", "ip:<addr>"). A bucket holds up to burst tokens and
// refills at burst per minute; every failure takes one. While a bucket is
// empty, requests with its key are refused before any secret is checked.
// Buckets live in memory on each node: a node limits what reaches it.
type limiter struct {
	burst float64
	rate  float64 // tokens per second
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
	// reported is set once the refusal of a blocked key was audited, so an
	// attacker hammering a blocked key does not flood the audit log.
	reported bool
}

// maxBuckets bounds the limiter's memory; full buckets are dropped first.
const maxBuckets = 100000

func newLimiter(perMinute int, now func() time.Time) *limiter {
	if perMinute <= 0 {
		return nil
	}
	return &limiter{burst: float64(perMinute), rate: float64(perMinute) / 60, now: now, buckets: map[string]*bucket{}}
}

// level returns b's tokens at now.
func (l *limiter) level(b *bucket, now time.Time) float64 {
	return math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
}

// blocked reports whether any of keys has no tokens left, how long until it
// has one, and whether this is the first refusal since it emptied.
func (l *limiter) blocked(keys ...string) (retry time.Duration, first bool, blocked bool) {
	if l == nil {
		return 0, false, false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		b := l.buckets[k]
		if b == nil {
			continue
		}
		lv := l.level(b, now)
		if lv >= 1 {
			b.reported = false
			continue
		}
		if d := time.Duration((1 - lv) / l.rate * float64(time.Second)); d > retry {
			retry = d
		}
		if !b.reported {
			b.reported, first = true, true
		}
		blocked = true
	}
	return retry, first, blocked
}

// fail takes a token from each key's bucket.
func (l *limiter) fail(keys ...string) {
	if l == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buckets) >= maxBuckets {
		l.sweep(now)
	}
	for _, k := range keys {
		b := l.buckets[k]
		if b == nil {
			b = &bucket{tokens: l.burst, at: now}
			l.buckets[k] = b
		}
		b.tokens, b.at = math.Max(0, l.level(b, now)-1), now
	}
}

// sweep drops the buckets that refilled; if that frees nothing, it drops
// them all (an attacker cycling through keys gains nothing it could not get
// by waiting a minute). Called with l.mu held.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets {
		clear(l.buckets)
	}
}
