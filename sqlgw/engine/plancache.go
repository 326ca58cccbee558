package engine

import (
	"sync"

	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe/lake"
)

// DefaultPlanCacheBytes bounds the estimated memory of cached scan plans
// when Options.PlanCacheBytes is zero.
const DefaultPlanCacheBytes = 32 << 20

// planCache caches the planned files of a table snapshot (snapshots are
// immutable, so plans never go stale). A plan holds every data file of the
// snapshot with its statistics, and a busy table gets a new snapshot with
// every commit, so the cache is bounded by the estimated memory of its
// plans (lake.TasksBytes) as well as by entry count: least recently used
// plans go first, and a plan above a quarter of the bound is not cached.
type planCache struct {
	c        *lru.Cache[planKey, plan]
	mu       sync.Mutex
	bytes    int64
	maxBytes int64
}

type plan struct {
	tasks []table.FileScanTask
	size  int64
}

func newPlanCache(entries int, maxBytes int64) (*planCache, error) {
	p := &planCache{maxBytes: maxBytes}
	c, err := lru.NewWithEvict[planKey, plan](entries, func(_ planKey, v plan) {
		p.mu.Lock()
		p.bytes -= v.size
		p.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	p.c = c
	return p, nil
}

// Get returns the cached plan of key.
func (p *planCache) Get(key planKey) ([]table.FileScanTask, bool) {
	v, ok := p.c.Get(key)
	return v.tasks, ok
}

// Add caches the plan of key, for a table of columns columns.
func (p *planCache) Add(key planKey, tasks []table.FileScanTask, columns int) {
	v := plan{tasks: tasks, size: lake.TasksBytes(tasks, columns)}
	if v.size > p.maxBytes/4 {
		return
	}
	if found, _ := p.c.ContainsOrAdd(key, v); found {
		return
	}
	p.mu.Lock()
	p.bytes += v.size
	over := p.bytes > p.maxBytes
	p.mu.Unlock()
	for over {
		if _, _, ok := p.c.RemoveOldest(); !ok {
			return
		}
		p.mu.Lock()
		over = p.bytes > p.maxBytes
		p.mu.Unlock()
	}
}

// resident returns the estimated memory of the cached plans.
func (p *planCache) resident() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}
