package catalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe"
)

// TableState is a table's current metadata as the catalog knows it.
// Location is "" for a staged (uncommitted) create.
type TableState struct {
	Location string
	Metadata table.Metadata
	// JSON is the compact metadata JSON exactly as stored.
	JSON []byte

	refsOnce sync.Once
	refsJSON []byte
}

// RefsOnlyJSON returns the metadata JSON with only the snapshots that a
// branch or tag references (loadTable's snapshots=refs).
func (s *TableState) RefsOnlyJSON() []byte {
	s.refsOnce.Do(func() { s.refsJSON = refsOnly(s.JSON, s.Metadata) })
	return s.refsJSON
}

func refsOnly(raw []byte, md table.Metadata) []byte {
	keep := map[int64]bool{}
	for _, ref := range md.Refs() {
		keep[ref.SnapshotID] = true
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw
	}
	var snaps []json.RawMessage
	if err := json.Unmarshal(obj["snapshots"], &snaps); err != nil || len(snaps) == 0 {
		return raw
	}
	kept := make([]json.RawMessage, 0, len(keep))
	for _, s := range snaps {
		var id struct {
			ID int64 `json:"snapshot-id"`
		}
		if json.Unmarshal(s, &id) == nil && keep[id.ID] {
			kept = append(kept, s)
		}
	}
	b, _ := json.Marshal(kept)
	obj["snapshots"] = b
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// ViewState is a view's current metadata.
type ViewState struct {
	Location string
	Metadata view.Metadata
	JSON     []byte
}

type cached struct {
	table *TableState
	view  *ViewState
}

// Resident-memory model of a cache entry. A parsed table metadata file holds
// its compact JSON, the raw snapshot array the parser keeps until the
// snapshots are first used, the materialised snapshots (summary maps and
// all), the schema's lazy indexes and, after a loadTable with
// snapshots=refs, the refs-only JSON. Measured on Go 1.26 (amd64) by
// TestEstimateCoversResidentSize, all of it together is 3.1-4.0 times the
// compact JSON (snapshot-heavy metadata about 3.2, a 2,000-column schema
// 4.0, a full metadata log 3.1); the estimate charges 4.5 times, an upper
// bound with a small margin, plus 1 KiB per entry.
const (
	residentPerJSONByte = 4.5
	residentPerEntry    = 1 << 10
)

// size is the estimated resident memory of the entry in bytes.
func (v cached) size() int64 {
	var n int
	switch {
	case v.table != nil:
		n = len(v.table.JSON)
	case v.view != nil:
		n = len(v.view.JSON)
	}
	return int64(float64(n)*residentPerJSONByte) + residentPerEntry
}

// metaCache caches parsed metadata files by location. Metadata files are
// immutable, so entries never go stale and every node may cache freely.
//
// Every commit writes a new metadata file whose JSON grows with the table's
// snapshot count, so caching every version of a busy table would hold
// memory quadratic in its history. Two rules keep it bounded: an entry that
// a newer version of its table supersedes is dropped as soon as that version
// is cached (the newer metadata's log names it), and the estimated resident
// memory of all entries (see cached.size) stays under maxBytes, evicting the
// least recently used first. The entry count is bounded too.
type metaCache struct {
	c        *lru.Cache[string, cached]
	mu       sync.Mutex
	bytes    int64
	maxBytes int64
}

func newMetaCache(n int, maxBytes int64) *metaCache {
	m := &metaCache{maxBytes: maxBytes}
	m.c, _ = lru.NewWithEvict[string, cached](n, func(_ string, v cached) {
		m.mu.Lock()
		m.bytes -= v.size()
		m.mu.Unlock()
	})
	return m
}

// resident returns the estimated resident memory of the cached entries.
func (m *metaCache) resident() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// add caches v under loc, drops the versions of its table that v supersedes,
// and evicts the least recently used entries while the cache holds more
// than maxBytes.
func (m *metaCache) add(loc string, v cached) {
	if v.table != nil && v.table.Metadata != nil {
		for e := range v.table.Metadata.PreviousFiles() {
			m.c.Remove(e.MetadataFile)
		}
	}
	if v.size() > m.maxBytes/4 {
		return // one huge file would flush everything else
	}
	if found, _ := m.c.ContainsOrAdd(loc, v); found {
		return
	}
	m.mu.Lock()
	m.bytes += v.size()
	over := m.bytes > m.maxBytes
	m.mu.Unlock()
	for over {
		if _, _, ok := m.c.RemoveOldest(); !ok {
			return
		}
		m.mu.Lock()
		over = m.bytes > m.maxBytes
		m.mu.Unlock()
	}
}

func (c *Catalog) readMetadataFile(ctx context.Context, loc string) ([]byte, error) {
	raw, err := c.io.ReadFile(ctx, loc)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, &floe.Error{Kind: floe.NotFound, Entity: "file", Msg: "Failed to open input stream for file: " + loc, Err: err}
		}
		return nil, fmt.Errorf("read metadata %s: %w", loc, err)
	}
	if strings.HasSuffix(loc, ".gz.metadata.json") || strings.HasSuffix(loc, ".metadata.json.gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "metadata file %s is not valid gzip", loc)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, 1<<30)); err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "metadata file %s is not valid gzip", loc)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "metadata file %s is not valid JSON", loc)
	}
	return buf.Bytes(), nil
}

// loadTableState returns the parsed table metadata at loc, from cache when possible.
func (c *Catalog) loadTableState(ctx context.Context, loc string) (*TableState, error) {
	if e, ok := c.cache.c.Get(loc); ok && e.table != nil {
		if err := c.checkExists(ctx, loc); err != nil {
			c.cache.c.Remove(loc)
			return nil, err
		}
		c.observe.MetadataCache(true)
		return e.table, nil
	}
	c.observe.MetadataCache(false)
	raw, err := c.readMetadataFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "metadata file %s is not valid table metadata", loc)
	}
	st := &TableState{Location: loc, Metadata: md, JSON: raw}
	c.cache.add(loc, cached{table: st})
	return st, nil
}

// loadViewState returns the parsed view metadata at loc, from cache when possible.
func (c *Catalog) loadViewState(ctx context.Context, loc string) (*ViewState, error) {
	if e, ok := c.cache.c.Get(loc); ok && e.view != nil {
		if err := c.checkExists(ctx, loc); err != nil {
			c.cache.c.Remove(loc)
			return nil, err
		}
		c.observe.MetadataCache(true)
		return e.view, nil
	}
	c.observe.MetadataCache(false)
	raw, err := c.readMetadataFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	md, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "metadata file %s is not valid view metadata", loc)
	}
	st := &ViewState{Location: loc, Metadata: md, JSON: raw}
	c.cache.add(loc, cached{view: st})
	return st, nil
}

// remember caches metadata the catalog has just written.
func (c *Catalog) remember(st *TableState) { c.cache.add(st.Location, cached{table: st}) }

func (c *Catalog) checkExists(ctx context.Context, loc string) error {
	st, ok := c.io.(Stater)
	if !ok {
		return nil
	}
	exists, err := st.Exists(ctx, loc)
	if err != nil {
		return fmt.Errorf("stat metadata %s: %w", loc, err)
	}
	if !exists {
		return &floe.Error{Kind: floe.NotFound, Entity: "file", Msg: "Failed to open input stream for file: " + loc}
	}
	return nil
}

// encodeMetadata returns md as JSON. iceberg-go's metadata types marshal
// themselves (each through json.Marshal of an inner struct), so calling
// their MarshalJSON directly spares the full extra pass in which
// json.Marshal re-validates and compacts a Marshaler's output: the same
// bytes, about a third less work on a table with a long history.
func encodeMetadata(md table.Metadata) ([]byte, error) {
	if m, ok := md.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(md)
}
