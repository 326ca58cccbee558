package remote

import (
	"container/list"
	"sync"
	"time"
)

// entry is one cached answer. val is immutable once stored: readers get
// copies of its maps and slices.
type entry struct {
	key     string
	val     any
	size    int64
	etag    string
	fetched time.Time // last fetched or revalidated (the TTL runs from here)
	// delegated: val was loaded with credentials requested and may answer a
	// call that needs them until credsUntil (half their lifetime; zero:
	// the remote vended none).
	delegated  bool
	credsUntil time.Time
}

// cache is a byte-bounded LRU of entries.
type cache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	ll    *list.List // front: most recently used
	items map[string]*list.Element
}

func newCache(max int64) *cache {
	return &cache{max: max, ll: list.New(), items: map[string]*list.Element{}}
}

// entryOverhead approximates the bookkeeping of one entry.
const entryOverhead = 256

// get returns a copy of the entry under key and marks it used.
func (c *cache) get(key string) (entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return entry{}, false
	}
	c.ll.MoveToFront(el)
	return *el.Value.(*entry), true
}

// put stores e, evicting the least recently used entries over the bound.
// An entry bigger than the whole bound is not stored.
func (c *cache) put(e entry) {
	e.size += int64(len(e.key)) + entryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.key]; ok {
		c.drop(el)
	}
	if e.size > c.max {
		return
	}
	c.items[e.key] = c.ll.PushFront(&e)
	c.used += e.size
	for c.used > c.max {
		c.drop(c.ll.Back())
	}
}

// touch restarts the TTL of the entry under key (a 304 kept it).
func (c *cache) touch(key string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*entry).fetched = at
		c.ll.MoveToFront(el)
	}
}

func (c *cache) drop(el *list.Element) {
	e := c.ll.Remove(el).(*entry)
	delete(c.items, e.key)
	c.used -= e.size
}

// dropWhere drops every entry whose key match reports.
func (c *cache) dropWhere(match func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.items {
		if match(key) {
			c.drop(el)
		}
	}
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	c.items = map[string]*list.Element{}
	c.used = 0
}

// stats returns the number of entries and the bytes they hold.
func (c *cache) stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len(), c.used
}
