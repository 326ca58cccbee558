// Package loginlimit counts failed authentication attempts and tells when
// a key (a client id, a client address, a user at an address) has used up
// its budget. The OAuth token endpoint and the SQL endpoint share it.
package loginlimit

import (
	"math"
	"sync"
	"time"
)

// DefaultMaxKeys bounds a Limiter's keys when Options.MaxKeys is unset.
const DefaultMaxKeys = 100000

// Options configures a Limiter.
type Options struct {
	// PerMinute is how many failures a key may have in a burst, refilled at
	// that many per minute. 0 or negative: no limit (New returns nil).
	PerMinute int
	// MaxKeys bounds the keys held (default DefaultMaxKeys).
	MaxKeys int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Limiter counts failed authentication attempts in token buckets, one per
// key. A bucket holds up to PerMinute tokens and refills at PerMinute per
// minute; every failure takes one. While a bucket is empty, attempts with
// its key are refused before any secret is checked. Buckets live in memory
// on each node: a node limits what reaches it. A nil *Limiter limits
// nothing. It is safe for concurrent use.
type Limiter struct {
	burst   float64
	rate    float64 // tokens per second
	maxKeys int
	now     func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
	// reported is set once the refusal of a blocked key was reported, so an
	// attacker hammering a blocked key does not flood the logs.
	reported bool
}

// New returns a Limiter, or nil (no limit) when o.PerMinute <= 0.
func New(o Options) *Limiter {
	if o.PerMinute <= 0 {
		return nil
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Limiter{burst: float64(o.PerMinute), rate: float64(o.PerMinute) / 60, maxKeys: o.MaxKeys, now: o.Now, buckets: map[string]*bucket{}}
}

// level returns b's tokens at now.
func (l *Limiter) level(b *bucket, now time.Time) float64 {
	return math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
}

// Blocked reports whether any of keys has no tokens left, how long until it
// has one, and whether this is the first refusal since it emptied.
func (l *Limiter) Blocked(keys ...string) (retry time.Duration, first bool, blocked bool) {
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

// Fail takes a token from each key's bucket.
func (l *Limiter) Fail(keys ...string) {
	if l == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buckets) >= l.maxKeys {
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

// Keys returns the number of keys held.
func (l *Limiter) Keys() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// sweep drops the buckets that refilled; if that frees nothing, it drops
// them all (an attacker cycling through keys gains nothing it could not get
// by waiting a minute). Called with l.mu held.
func (l *Limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= l.maxKeys {
		clear(l.buckets)
	}
}
