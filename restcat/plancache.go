package restcat

import (
	"container/list"
	"sync"
	"time"
)

// boundedLRU is a least-recently-used cache bounded by entry count and by
// the total size its entries declare, whose entries also expire after a
// fixed lifetime. Scan planning keeps two: the plans (encoded pages, large)
// and the plan handles handed to clients (small).
type boundedLRU[K comparable, V any] struct {
	mu       sync.Mutex
	ll       *list.List // front: most recently used
	items    map[K]*list.Element
	bytes    int64
	maxItems int
	maxBytes int64
	ttl      time.Duration
	now      func() time.Time
	// evictions counts entries removed to stay within the bounds (not
	// expiries or explicit removals), for tests and logs.
	evictions int
}

type lruEntry[K comparable, V any] struct {
	key     K
	val     V
	size    int64
	expires time.Time
}

func newBoundedLRU[K comparable, V any](maxItems int, maxBytes int64, ttl time.Duration, now func() time.Time) *boundedLRU[K, V] {
	if now == nil {
		now = time.Now
	}
	return &boundedLRU[K, V]{ll: list.New(), items: map[K]*list.Element{}, maxItems: max(maxItems, 1),
		maxBytes: max(maxBytes, 1), ttl: ttl, now: now}
}

// Get returns the live entry of key, marking it used.
func (c *boundedLRU[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[K, V])
	if !c.now().Before(e.expires) {
		c.remove(el)
		return zero, false
	}
	c.ll.MoveToFront(el)
	return e.val, true
}

// Add stores val under key with its size, replacing an entry of the same
// key, and evicts the least recently used entries until the cache is within
// its bounds. An entry larger than the byte bound is not stored; Add
// reports whether val was.
func (c *boundedLRU[K, V]) Add(key K, val V, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	if size > c.maxBytes {
		return false
	}
	e := &lruEntry[K, V]{key: key, val: val, size: size, expires: c.now().Add(c.ttl)}
	c.items[key] = c.ll.PushFront(e)
	c.bytes += size
	for len(c.items) > c.maxItems || c.bytes > c.maxBytes {
		c.remove(c.ll.Back())
		c.evictions++
	}
	return true
}

// Remove deletes key, reporting whether it was present and live.
func (c *boundedLRU[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return false
	}
	live := c.now().Before(el.Value.(*lruEntry[K, V]).expires)
	c.remove(el)
	return live
}

// Len returns the number of entries held (expired ones included until
// they are next looked up or evicted) and their total size.
func (c *boundedLRU[K, V]) Len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes
}

func (c *boundedLRU[K, V]) remove(el *list.Element) {
	e := el.Value.(*lruEntry[K, V])
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.bytes -= e.size
}
