package deltasharing

import (
	"container/list"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
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
	// renamed is why a live file cannot be read by name with the schema
	// served ("" when all can).
	renamed string
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
	// cols indexes parts and the bounds by lower-case name.
	cols *columns
	// parts holds the file's partition values (kind 'x': the file's spec
	// has no such field).
	parts []pval
	// lo, hi and nulls hold column stats (kind 'x', -1: unknown).
	lo, hi []pval
	nulls  []int64
}

// columns indexes the partition fields (by partition field name and, for
// identity fields, source column name) and the columns with stats of a
// listing, by lower-case name.
type columns struct {
	parts, stats map[string]int
}

// part returns the file's value of a partition field or identity column.
func (f *fileEntry) part(name string) (pval, bool) {
	if f.cols == nil {
		return pval{}, false
	}
	i, ok := f.cols.parts[name]
	if !ok || f.parts[i].kind == 'x' {
		return pval{}, false
	}
	return f.parts[i], true
}

// bounds returns a column's stats: lower and upper bounds (kind 'x' when
// unknown) and null count (-1 when unknown).
func (f *fileEntry) bounds(name string) (lo, hi pval, nulls int64) {
	absent := pval{kind: 'x'}
	if f.cols == nil {
		return absent, absent, -1
	}
	i, ok := f.cols.stats[name]
	if !ok {
		return absent, absent, -1
	}
	return f.lo[i], f.hi[i], f.nulls[i]
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
	l.partitionColumns = []string{}
	if he.snap == nil {
		// No files yet: the identity columns of the default spec.
		spec := md.PartitionSpec()
		for _, f := range spec.Fields() {
			if _, ok := f.Transform.(iceberg.IdentityTransform); ok {
				if col, ok := sc.FindFieldByID(f.SourceID()); ok && partitionable(col.Type) {
					l.partitionColumns = append(l.partitionColumns, col.Name)
				}
			}
		}
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
	cols, plans := partitionPlans(sc, specs, pcols2(pcols, func(p pcol) int { return p.sourceID }))
	stats := statColumns(sc, cols)
	// The schema each file was written with: its snapshot's (unknown for an
	// expired snapshot: then every older schema is suspect).
	snapSchema := map[int64]int{}
	for _, sn := range md.Snapshots() {
		if sn.SchemaID != nil {
			snapSchema[sn.SnapshotID] = *sn.SchemaID
		}
	}
	conflicts := map[int]string{}
	conflict := func(snapshotID int64) string {
		sid, ok := snapSchema[snapshotID]
		if !ok {
			sid = -1
		}
		if c, ok := conflicts[sid]; ok {
			return c
		}
		c := ""
		for _, ws := range md.Schemas() {
			if (sid == -1 && ws.ID < sc.ID) || ws.ID == sid {
				if c = nameConflict(ws, sc); c != "" {
					break
				}
			}
		}
		conflicts[sid] = c
		return c
	}
	loc := strings.TrimSuffix(md.Location(), "/") + "/"
	var n int
	for _, m := range manifests {
		n += int(m.AddedDataFiles() + m.ExistingDataFiles())
	}
	l.files = make([]fileEntry, 0, min(max(n, 0), 1<<20))
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
			if l.renamed == "" {
				l.renamed = conflict(e.SnapshotID())
			}
			fe := fileEntry{bucket: b, key: k, size: df.FileSizeBytes(), records: df.Count(), cols: cols}
			sum := md5.Sum([]byte(df.FilePath()))
			fe.id = hex.EncodeToString(sum[:])
			// Partition values.
			fe.parts = make([]pval, len(cols.parts))
			for i := range fe.parts {
				fe.parts[i].kind = 'x'
			}
			pvs := make([]pval, len(pcols))
			part := df.Partition()
			for _, pf := range plans[int(df.SpecID())] {
				v, has := part[pf.fieldID]
				pv := pvalOf(pf.typ, v, has)
				fe.parts[pf.name] = pv
				if pf.source >= 0 {
					fe.parts[pf.source] = pv
				}
				if pf.pcol >= 0 {
					pvs[pf.pcol] = pv
				}
			}
			fe.partitionValues = partitionValuesJSON(pcols2(pcols, func(p pcol) string { return p.name }), pvs)
			fe.statsJSON = appendJSONString(nil, string(statsOf(stats, df, &fe)))
			l.size += fe.size
			l.files = append(l.files, fe)
		}
	}
	return l, nil
}

func pcols2[P, T any](ps []P, f func(P) T) []T {
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = f(p)
	}
	return out
}

// planField is how to read one partition field of a spec.
type planField struct {
	fieldID int
	typ     iceberg.Type // the field's result type (nil: source column dropped)
	name    int          // index in columns.parts of the field's name
	source  int          // index of the identity source column's name, or -1
	pcol    int          // index among the partition columns, or -1
}

// partitionPlans indexes the partition fields of specs and says, per spec,
// how to read a file's partition values; pcols are the source ids of the
// partition columns.
func partitionPlans(sc *iceberg.Schema, specs map[int]*iceberg.PartitionSpec, pcols []int) (*columns, map[int][]planField) {
	cols := &columns{parts: map[string]int{}, stats: map[string]int{}}
	idx := func(name string) int {
		lc := strings.ToLower(name)
		i, ok := cols.parts[lc]
		if !ok {
			i = len(cols.parts)
			cols.parts[lc] = i
		}
		return i
	}
	plans := map[int][]planField{}
	for id, spec := range specs {
		for _, f := range spec.Fields() {
			pf := planField{fieldID: f.FieldID, name: idx(f.Name), source: -1, pcol: -1}
			col, ok := sc.FindFieldByID(f.SourceID())
			if ok {
				pf.typ = f.Transform.ResultType(col.Type)
			}
			if _, identity := f.Transform.(iceberg.IdentityTransform); identity && ok {
				pf.source = idx(col.Name)
				pf.pcol = slices.Index(pcols, f.SourceID())
			}
			plans[id] = append(plans[id], pf)
		}
	}
	return cols, plans
}

// partitionValuesJSON encodes a file's partitionValues.
func partitionValuesJSON(names []string, vals []pval) json.RawMessage {
	b := append(make([]byte, 0, 64), '{')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, n)
		b = append(b, ':')
		if vals[i].kind == 0 || vals[i].kind == 'x' {
			b = append(b, "null"...)
			continue
		}
		b = appendJSONString(b, vals[i].partitionString())
	}
	return append(b, '}')
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

// appendJSON appends a bound as a stats value.
func (p pval) appendJSON(b []byte) []byte {
	switch p.kind {
	case 's':
		return appendJSONString(b, p.s)
	case 'd':
		return appendJSONString(b, dateString(p.n))
	case 't':
		return appendJSONString(b, time.UnixMicro(int64(p.n)).UTC().Format("2006-01-02T15:04:05.000Z"))
	case 'b':
		return strconv.AppendBool(b, p.b)
	case 'n':
		if p.s != "" {
			return append(b, p.s...)
		}
		return strconv.AppendFloat(b, p.n, 'g', -1, 64)
	}
	return append(b, "null"...)
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

// statColumn is a top-level column whose stats Delta Sharing shows.
type statColumn struct {
	id   int
	name []byte // encoded as a JSON string
	typ  iceberg.Type
}

// statColumns returns the columns of sc with stats (top-level, primitive,
// orderable) and indexes them in cols.
func statColumns(sc *iceberg.Schema, cols *columns) []statColumn {
	var out []statColumn
	for _, f := range sc.Fields() {
		switch f.Type.(type) {
		case iceberg.UUIDType, iceberg.FixedType, iceberg.BinaryType, *iceberg.StructType, *iceberg.ListType, *iceberg.MapType,
			iceberg.TimestampNsType, iceberg.TimestampTzNsType, iceberg.TimeType, iceberg.VariantType, iceberg.GeometryType,
			iceberg.GeographyType, iceberg.UnknownType:
			continue
		}
		cols.stats[strings.ToLower(f.Name)] = len(out)
		out = append(out, statColumn{id: f.ID, name: appendJSONString(nil, f.Name), typ: f.Type})
	}
	return out
}

// statsOf fills fe's bounds from df and returns Delta Sharing's stats
// object: numRecords, and minValues, maxValues and nullCount of the stat
// columns.
func statsOf(cols []statColumn, df iceberg.DataFile, fe *fileEntry) []byte {
	lo, hi, nc := df.LowerBoundValues(), df.UpperBoundValues(), df.NullValueCounts()
	fe.lo, fe.hi, fe.nulls = make([]pval, len(cols)), make([]pval, len(cols)), make([]int64, len(cols))
	for i, c := range cols {
		fe.lo[i], fe.hi[i], fe.nulls[i] = boundOf(c.typ, lo[c.id]), boundOf(c.typ, hi[c.id]), -1
		if n, ok := nc[c.id]; ok {
			fe.nulls[i] = n
		}
	}
	b := append(make([]byte, 0, 256), `{"numRecords":`...)
	b = strconv.AppendInt(b, df.Count(), 10)
	section := func(name string, vals []pval, ceil bool) {
		b = append(b, `,"`+name+`":{`...)
		first := true
		for i, c := range cols {
			v := vals[i]
			if v.kind == 'x' || v.kind == 0 || (v.kind == 'n' && v.s == "" && (math.IsInf(v.n, 0) || math.IsNaN(v.n))) {
				continue
			}
			if ceil && v.kind == 't' { // stats hold milliseconds: round a maximum up
				v.n = math.Ceil(v.n/1000) * 1000
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, c.name...)
			b = append(b, ':')
			b = v.appendJSON(b)
		}
		b = append(b, '}')
	}
	section("minValues", fe.lo, false)
	section("maxValues", fe.hi, true)
	b = append(b, `,"nullCount":{`...)
	first := true
	for i, c := range cols {
		if fe.nulls[i] < 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, c.name...)
		b = append(b, ':')
		b = strconv.AppendInt(b, fe.nulls[i], 10)
	}
	return append(b, "}}"...)
}

// boundOf decodes a serialized bound (kind 'x' when absent or undecodable).
func boundOf(t iceberg.Type, raw []byte) pval {
	if raw == nil {
		return pval{kind: 'x'}
	}
	lit, err := iceberg.LiteralFromBytes(t, raw)
	if err != nil {
		return pval{kind: 'x'}
	}
	p := pvalOfLiteral(lit)
	if p.kind == 0 {
		return pval{kind: 'x'}
	}
	return p
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
