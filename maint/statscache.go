package maint

import (
	"container/list"
	"slices"
	"sync"
)

// DefaultStatsCacheEntries bounds a StatsCache made with NewStatsCache(0).
const DefaultStatsCacheEntries = 256

// fileStatsOf is what fileStats reads from a snapshot's manifests. A
// snapshot's manifests never change, so it is cached per table and snapshot.
type fileStatsOf struct {
	DataManifests int
	DataFiles     int64
	DeleteFiles   int64
	Records       int64
	Bytes         int64
	Partitions    []PartitionInfo
	SizeHistogram []SizeBucket
}

type statsKey struct {
	table    string // the table's UUID
	snapshot int64
}

type statsEntry struct {
	key   statsKey
	stats fileStatsOf
}

// StatsCache keeps the file statistics of the snapshots Show described
// last, so that describing a table again reads no manifest until its
// current snapshot changes. It holds at most its bound of snapshots, the
// least recently used leaving first. It is safe for concurrent use; a nil
// *StatsCache caches nothing.
type StatsCache struct {
	max int

	mu    sync.Mutex
	order *list.List // front: most recently used
	byKey map[statsKey]*list.Element
}

// NewStatsCache returns a cache of at most max snapshots' statistics
// (DefaultStatsCacheEntries when max <= 0).
func NewStatsCache(max int) *StatsCache {
	if max <= 0 {
		max = DefaultStatsCacheEntries
	}
	return &StatsCache{max: max, order: list.New(), byKey: map[statsKey]*list.Element{}}
}

func (c *StatsCache) get(k statsKey) (fileStatsOf, bool) {
	if c == nil {
		return fileStatsOf{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return fileStatsOf{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*statsEntry).stats.clone(), true
}

func (c *StatsCache) put(k statsKey, s fileStatsOf) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		e.Value.(*statsEntry).stats = s.clone()
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&statsEntry{key: k, stats: s.clone()})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*statsEntry).key)
	}
}

// Len is how many snapshots' statistics are held.
func (c *StatsCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (s fileStatsOf) clone() fileStatsOf {
	s.Partitions = slices.Clone(s.Partitions)
	s.SizeHistogram = slices.Clone(s.SizeHistogram)
	return s
}
