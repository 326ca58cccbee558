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
	// manifests are the paths of the snapshot's manifests when the plan is
	// of every file (no row filter), for planning a child snapshot that
	// only adds files (see appendPlan); nil otherwise.
	manifests []string
	size      int64
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

// manifestsOf returns the cached plan of key with its snapshot's manifest
// paths, when the plan was cached with them.
func (p *planCache) manifestsOf(key planKey) ([]table.FileScanTask, []string, bool) {
	v, ok := p.c.Get(key)
	return v.tasks, v.manifests, ok && v.manifests != nil
}

// Add caches the plan of key, for a table of columns columns, with the
// paths of the snapshot's manifests (nil if not known).
func (p *planCache) Add(key planKey, tasks []table.FileScanTask, manifests []string, columns int) {
	size := lake.TasksBytes(tasks, columns)
	for _, m := range manifests {
		size += int64(len(m)) + 16
	}
	v := plan{tasks: tasks, manifests: manifests, size: size}
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
