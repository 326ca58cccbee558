package deltasharing

import (
	"container/list"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/objstore"
)

// listing is what a query serves of one version of a table, computed once
// per snapshot and schema and cached.
type listing struct {
	version          int64
	schemaString     string
	partitionColumns []string
	files            []fileEntry
	size             int64
	// deletes names a live delete file when the snapshot has row-level
	// deletes ("" when it has none).
	deletes string
	// schemaErr is why the schema cannot be served ("" when it can).
	schemaErr string
}

// fileEntry is one live data file.
type fileEntry struct {
	bucket, key string
	size        int64
	records     int64
	id          string
	// partitionValues is the encoded partitionValues object.
	partitionValues json.RawMessage
	// statsJSON is the stats string, encoded as a JSON string.
	statsJSON []byte
	// parts holds the file's partition values by lower-case partition
	// field name and, for identity fields, source column name.
	parts map[string]pval
	// min, max and nulls hold column stats by lower-case column name.
	min, max map[string]pval
	nulls    map[string]int64
}

// pval is a typed value of a partition or a bound: a number, a string, a
// boolean, a date (days since 1970-01-01 in n), a timestamp (microseconds
// since 1970-01-01 UTC in n), or null.
type pval struct {
	kind byte // 'n' number, 's' string, 'b' bool, 'd' date, 't' timestamp, 0 null
	n    float64
	s    string // a number's exact text, or the string
	b    bool
}

// listing returns the listing of version h of rt.
func (h *Handler) listing(ctx context.Context, rt *resolved, he histEntry) (*listing, error) {
	md := rt.state.Metadata
	sc := schemaOf(md, he)
	key := rt.state.Location + "|" + strconv.Itoa(sc.ID)
	if he.snap != nil {
		key = he.snap.ManifestList + "|" + strconv.FormatInt(he.snap.SnapshotID, 10) + "|" + strconv.Itoa(sc.ID)
	}
	if l, ok := h.files.get(key); ok {
		return l, nil
	}
	l, err := h.buildListing(ctx, rt, he, sc)
	if err != nil {
		return nil, err
	}
	h.files.put(key, l)
	return l, nil
}

func (h *Handler) buildListing(ctx context.Context, rt *resolved, he histEntry, sc *iceberg.Schema) (*listing, error) {
	md := rt.state.Metadata
	l := &listing{version: he.version}
	ss, err := schemaString(sc)
	if err != nil {
		l.schemaErr = err.Error()
		ss = `{"type":"struct","fields":[]}`
	}
	l.schemaString = ss
	if he.snap == nil {
		return l, nil
	}
	if h.opts.FS == nil {
		return nil, fmt.Errorf("deltasharing: no FileIO configured")
	}
	manifests, err := he.snap.Manifests(h.opts.FS)
	if err != nil {
		return nil, fmt.Errorf("deltasharing: read manifest list of %s: %w", rt.t.Ident, err)
	}
	specs := map[int]*iceberg.PartitionSpec{}
	for _, s := range md.PartitionSpecs() {
		specs[s.ID()] = &s
	}
	// Partition columns: identity-partitioned columns of every spec that
	// live data files use (a file written under a spec without the column
	// could not give its value).
	used := map[int]bool{}
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData {
			used[int(m.PartitionSpecID())] = true
		}
	}
	type pcol struct {
		name     string
		sourceID int
		typ      iceberg.Type
	}
	var pcols []pcol
	first := true
	for id := range used {
		spec := specs[id]
		if spec == nil {
			return nil, fmt.Errorf("deltasharing: table %s has no partition spec %d", rt.t.Ident, id)
		}
		ids := map[int]bool{}
		for _, f := range spec.Fields() {
			if _, ok := f.Transform.(iceberg.IdentityTransform); ok {
				ids[f.SourceID()] = true
			}
		}
		if first {
			for _, f := range spec.Fields() {
				if _, ok := f.Transform.(iceberg.IdentityTransform); !ok {
					continue
				}
				col, ok := sc.FindFieldByID(f.SourceID())
				if !ok || !partitionable(col.Type) {
					continue
				}
				pcols = append(pcols, pcol{name: col.Name, sourceID: f.SourceID(), typ: col.Type})
			}
			first = false
			continue
		}
		kept := pcols[:0]
		for _, p := range pcols {
			if ids[p.sourceID] {
				kept = append(kept, p)
			}
		}
		pcols = kept
	}
	l.partitionColumns = make([]string, len(pcols))
	for i, p := range pcols {
		l.partitionColumns[i] = p.name
	}
	loc := strings.TrimSuffix(md.Location(), "/") + "/"
	for _, m := range manifests {
		for e, err := range m.Entries(h.opts.FS, true) {
			if err != nil {
				return nil, fmt.Errorf("deltasharing: read manifest %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			if m.ManifestContent() != iceberg.ManifestContentData || df.ContentType() != iceberg.EntryContentData {
				if l.deletes == "" {
					l.deletes = df.FilePath()
				}
				continue
			}
			if !strings.HasPrefix(df.FilePath(), loc) {
				return nil, fmt.Errorf("deltasharing: table %s has a data file outside its location: %s", rt.t.Ident, df.FilePath())
			}
			b, k, err := objstore.ParseLocation(df.FilePath())
			if err != nil || k == "" {
				return nil, fmt.Errorf("deltasharing: data file %s is not on S3: %w", df.FilePath(), err)
			}
			fe := fileEntry{bucket: b, key: k, size: df.FileSizeBytes(), records: df.Count()}
			sum := md5.Sum([]byte(df.FilePath()))
			fe.id = hex.EncodeToString(sum[:])
			// Partition values.
			spec := specs[int(df.SpecID())]
			part := df.Partition()
			fe.parts = map[string]pval{}
			bySource := map[int]pval{}
			if spec != nil {
				for _, f := range spec.Fields() {
					v, has := part[f.FieldID]
					var rt iceberg.Type
					if col, ok := sc.FindFieldByID(f.SourceID()); ok {
						rt = f.Transform.ResultType(col.Type)
					}
					pv := pvalOf(rt, v, has)
					fe.parts[strings.ToLower(f.Name)] = pv
					if _, ok := f.Transform.(iceberg.IdentityTransform); ok {
						bySource[f.SourceID()] = pv
						if col, ok := sc.FindFieldByID(f.SourceID()); ok {
							fe.parts[strings.ToLower(col.Name)] = pv
						}
					}
				}
			}
			pvs := make(map[string]*string, len(pcols))
			for _, p := range pcols {
				pv, ok := bySource[p.sourceID]
				if !ok || pv.kind == 0 {
					pvs[p.name] = nil
					continue
				}
				s := pv.partitionString()
				pvs[p.name] = &s
			}
			fe.partitionValues, _ = json.Marshal(pvs)
			var stats string
			stats, fe.min, fe.max, fe.nulls = statsOf(sc, df)
			fe.statsJSON = appendJSONString(nil, stats)
			l.size += fe.size
			l.files = append(l.files, fe)
		}
	}
	return l, nil
}

// partitionable reports whether a column type can be a Delta partition
// column (not binary, not nested).
func partitionable(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.UUIDType, iceberg.FixedType, iceberg.BinaryType, *iceberg.StructType, *iceberg.ListType, *iceberg.MapType:
		return false
	}
	return true
}

// pvalOf converts a partition value of type t.
func pvalOf(t iceberg.Type, v any, has bool) pval {
	if !has || v == nil {
		return pval{}
	}
	switch x := v.(type) {
	case string:
		return pval{kind: 's', s: x}
	case bool:
		return pval{kind: 'b', b: x}
	case int32:
		return numOrTime(t, int64(x))
	case int64:
		return numOrTime(t, x)
	case int:
		return numOrTime(t, int64(x))
	case float32:
		return pval{kind: 'n', n: float64(x)}
	case float64:
		return pval{kind: 'n', n: x}
	case iceberg.Date:
		return pval{kind: 'd', n: float64(x)}
	case iceberg.Timestamp:
		return pval{kind: 't', n: float64(x)}
	case iceberg.Time:
		return pval{kind: 'n', n: float64(x)}
	case iceberg.Decimal:
		f, _ := strconv.ParseFloat(iceberg.DecimalLiteral(x).String(), 64)
		return pval{kind: 'n', n: f, s: iceberg.DecimalLiteral(x).String()}
	case iceberg.Literal:
		return pvalOfLiteral(x)
	}
	return pval{kind: 's', s: fmt.Sprint(v)}
}

// numOrTime reads an integer partition value: days of a date, microseconds
// of a timestamp, else a number.
func numOrTime(t iceberg.Type, n int64) pval {
	switch t.(type) {
	case iceberg.DateType:
		return pval{kind: 'd', n: float64(n)}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return pval{kind: 't', n: float64(n)}
	}
	return pval{kind: 'n', n: float64(n), s: strconv.FormatInt(n, 10)}
}

func dateString(days float64) string {
	return time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02")
}

// partitionString renders a partition value as Delta Sharing's
// partitionValues do.
func (p pval) partitionString() string {
	switch p.kind {
	case 's':
		return p.s
	case 'd':
		return dateString(p.n)
	case 't':
		return time.UnixMicro(int64(p.n)).UTC().Format("2006-01-02 15:04:05.000000")
	case 'b':
		return strconv.FormatBool(p.b)
	case 'n':
		if p.s != "" {
			return p.s
		}
		return strconv.FormatFloat(p.n, 'g', -1, 64)
	}
	return ""
}

// json renders a bound as a stats value.
func (p pval) json() any {
	switch p.kind {
	case 's':
		return p.s
	case 'd':
		return dateString(p.n)
	case 't':
		return time.UnixMicro(int64(p.n)).UTC().Format("2006-01-02T15:04:05.000Z")
	case 'b':
		return p.b
	case 'n':
		if p.s != "" {
			return json.Number(p.s)
		}
		if math.IsInf(p.n, 0) || math.IsNaN(p.n) {
			return nil
		}
		return p.n
	}
	return nil
}

func pvalOfLiteral(l iceberg.Literal) pval {
	switch x := l.(type) {
	case iceberg.BoolLiteral:
		return pval{kind: 'b', b: bool(x)}
	case iceberg.Int32Literal:
		return pval{kind: 'n', n: float64(x), s: strconv.FormatInt(int64(x), 10)}
	case iceberg.Int64Literal:
		return pval{kind: 'n', n: float64(x), s: strconv.FormatInt(int64(x), 10)}
	case iceberg.Float32Literal:
		return pval{kind: 'n', n: float64(x)}
	case iceberg.Float64Literal:
		return pval{kind: 'n', n: float64(x)}
	case iceberg.StringLiteral:
		return pval{kind: 's', s: string(x)}
	case iceberg.DateLiteral:
		return pval{kind: 'd', n: float64(x)}
	case iceberg.TimestampLiteral:
		return pval{kind: 't', n: float64(x)}
	case iceberg.DecimalLiteral:
		s := x.String()
		f, _ := strconv.ParseFloat(s, 64)
		return pval{kind: 'n', n: f, s: s}
	}
	return pval{}
}

// statsOf renders a data file's stats as Delta Sharing's stats string
// (numRecords, and minValues, maxValues and nullCount of top-level
// primitive columns with orderable values), and returns the bounds.
func statsOf(sc *iceberg.Schema, df iceberg.DataFile) (string, map[string]pval, map[string]pval, map[string]int64) {
	lo, hi, nc := df.LowerBoundValues(), df.UpperBoundValues(), df.NullValueCounts()
	mins, maxs, nulls := map[string]pval{}, map[string]pval{}, map[string]int64{}
	jmin, jmax, jnull := map[string]any{}, map[string]any{}, map[string]any{}
	for _, f := range sc.Fields() {
		switch f.Type.(type) {
		case iceberg.UUIDType, iceberg.FixedType, iceberg.BinaryType, *iceberg.StructType, *iceberg.ListType, *iceberg.MapType,
			iceberg.TimestampNsType, iceberg.TimestampTzNsType, iceberg.TimeType:
			continue
		}
		lc := strings.ToLower(f.Name)
		if n, ok := nc[f.ID]; ok {
			nulls[lc] = n
			jnull[f.Name] = n
		}
		if b, ok := lo[f.ID]; ok {
			if lit, err := iceberg.LiteralFromBytes(f.Type, b); err == nil {
				if p := pvalOfLiteral(lit); p.kind != 0 && p.json() != nil {
					mins[lc] = p
					jmin[f.Name] = p.json()
				}
			}
		}
		if b, ok := hi[f.ID]; ok {
			if lit, err := iceberg.LiteralFromBytes(f.Type, b); err == nil {
				if p := pvalOfLiteral(lit); p.kind != 0 && p.json() != nil {
					maxs[lc] = p
					if p.kind == 't' { // stats hold milliseconds: round a maximum up
						p.n = math.Ceil(p.n/1000) * 1000
					}
					jmax[f.Name] = p.json()
				}
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"numRecords": df.Count(), "minValues": jmin, "maxValues": jmax, "nullCount": jnull})
	return string(b), mins, maxs, nulls
}

// DefaultCacheEntries bounds the cached listings.
const DefaultCacheEntries = 64

// maxCachedFiles bounds the files all cached listings hold together.
const maxCachedFiles = 1_000_000

// listingCache is a bounded LRU of listings by snapshot and schema.
type listingCache struct {
	mu       sync.Mutex
	max      int
	maxFiles int
	files    int
	order    *list.List
	byKey    map[string]*list.Element
}

type cacheItem struct {
	key string
	l   *listing
}

func newListingCache(max int) *listingCache {
	return &listingCache{max: max, maxFiles: maxCachedFiles, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *listingCache) get(key string) (*listing, bool) {
	if c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheItem).l, true
}

func (c *listingCache) put(key string, l *listing) {
	if c.max <= 0 || len(l.files) > c.maxFiles {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&cacheItem{key: key, l: l})
	c.files += len(l.files)
	for c.order.Len() > c.max || c.files > c.maxFiles {
		e := c.order.Back()
		it := e.Value.(*cacheItem)
		c.order.Remove(e)
		delete(c.byKey, it.key)
		c.files -= len(it.l.files)
	}
}

// len returns the number of cached listings.
func (c *listingCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
