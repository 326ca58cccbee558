package engine

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/iceberg-go/table"
)

// DefaultTableCacheBytes is Options.TableCacheBytes when unset.
const DefaultTableCacheBytes = 16 << 20

// TableCacheStats counts, over all sessions, the reads of small tables
// served from a session's kept rows (Hits), the copies made (Misses) and
// the copies dropped to make room (Evictions).
type TableCacheStats struct {
	Hits, Misses, Evictions uint64
}

// tableCacheCounters are the engine's TableCacheStats.
type tableCacheCounters struct {
	hits, misses, evictions atomic.Uint64
}

// tableKey identifies the rows of a table as a session reads them: one
// snapshot (immutable) under one schema (a rename changes the view).
type tableKey struct {
	uuid     string
	snapshot int64
	schema   int
}

// cachedTable is a temporary DuckDB table holding a small table's rows.
type cachedTable struct {
	name  string
	bytes int64  // the data and delete files it was read from
	used  uint64 // tableCache.clock at the last use
}

// tableCache keeps the rows of a session's small tables, read at one
// snapshot with deletes applied (no data filter: the policy view wraps the
// cached rows like any other), in temporary tables of the session's DuckDB
// database. DuckDB re-binds read_parquet at every execution of a
// parameterised statement (opening the file and reading its footer) and
// decodes the row groups again, while a prepared statement over a native
// table keeps its plan and scans decoded vectors: a point query over a
// cached dimension table costs a fraction of one over its files. The
// statement analysis refuses one-part and DuckDB-catalog names, so no query
// can name the temporary tables itself.
type tableCache struct {
	limit   int64 // data-file bytes the session may hold; <= 0: off
	used    int64
	seq     int
	clock   uint64
	entries map[tableKey]*cachedTable
}

func newTableCache(limit int64) *tableCache {
	return &tableCache{limit: limit, entries: map[tableKey]*cachedTable{}}
}

// maxTable is the largest table (bytes of files) the cache takes: a quarter
// of its budget, so that a few tables fit.
func (c *tableCache) maxTable() int64 { return c.limit / 4 }

// keepable returns the bytes of the files of tasks when the session keeps
// the rows of a table read from them in memory, else 0.
func (c *tableCache) keepable(tasks []table.FileScanTask) int64 {
	if c.limit <= 0 || len(tasks) == 0 {
		return 0
	}
	if size := filesBytes(tasks); size <= c.maxTable() {
		return size
	}
	return 0
}

// filesBytes sums the sizes of the data and delete files of tasks.
func filesBytes(tasks []table.FileScanTask) int64 {
	var n int64
	seen := map[string]bool{}
	add := func(path string, size int64) {
		if !seen[path] {
			seen[path] = true
			n += size
		}
	}
	for _, t := range tasks {
		add(t.File.FilePath(), t.File.FileSizeBytes())
		for _, d := range t.DeleteFiles {
			add(d.FilePath(), d.FileSizeBytes())
		}
		for _, d := range t.EqualityDeleteFiles {
			add(d.FilePath(), d.FileSizeBytes())
		}
	}
	return n
}

// keptBase returns the SQL of the rows of tbl at snapshot, read from all
// of the snapshot's files (tasks, size bytes: see keepable), as a scan of
// the session's temporary table holding them, made now if missing; or,
// when making it fails, as the scan of the files.
func (ss *session) keptBase(ctx context.Context, tbl *table.Table, snapshot int64, tasks []table.FileScanTask, size int64, pins *pinSet) (string, error) {
	e, c := ss.e, ss.tables
	key := tableKey{uuid: scopeOf(ctx).key(tbl.Metadata().TableUUID().String()), snapshot: snapshot, schema: tbl.Schema().ID}
	c.clock++
	if ct, ok := c.entries[key]; ok {
		ct.used = c.clock
		e.kept.hits.Add(1)
		return "SELECT * FROM " + ct.name, nil
	}
	base, err := e.baseSQL(ctx, tbl.Schema(), tasks, pins)
	if err != nil {
		return "", err
	}
	for c.used+size > c.limit && c.evictOldest(ctx, ss) {
	}
	c.seq++
	name := fmt.Sprintf("__floe_tbl_%d", c.seq)
	if _, err := ss.conn.ExecContext(ctx, "CREATE TEMP TABLE "+name+" AS "+base, nil); err != nil {
		// Out of memory, most likely: read the files instead.
		e.log.DebugContext(ctx, "sql: table not kept in the session", "table", key.uuid, "err", err)
		return base, nil
	}
	e.kept.misses.Add(1)
	c.entries[key] = &cachedTable{name: name, bytes: size, used: c.clock}
	c.used += size
	return "SELECT * FROM " + name, nil
}

// evictOldest drops the least recently used table; false when none is left.
func (c *tableCache) evictOldest(ctx context.Context, ss *session) bool {
	var oldest tableKey
	var ot *cachedTable
	for k, ct := range c.entries {
		if ot == nil || ct.used < ot.used {
			oldest, ot = k, ct
		}
	}
	if ot == nil {
		return false
	}
	ss.e.kept.evictions.Add(1)
	delete(c.entries, oldest)
	c.used -= ot.bytes
	if _, err := ss.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+ot.name, nil); err != nil {
		ss.e.log.DebugContext(ctx, "sql: dropping a kept table failed", "table", ot.name, "err", err)
	}
	return true
}
