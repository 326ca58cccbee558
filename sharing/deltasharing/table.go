package deltasharing

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sharing"
)

// resolved is a shared table loaded at its current metadata.
type resolved struct {
	t     sharing.Table
	state *catalog.TableState
	hist  []histEntry // the main branch's snapshots, oldest first
}

// histEntry is one version of a table.
type histEntry struct {
	snap    *table.Snapshot
	version int64
}

// resolve finds the shared table c names and loads its metadata. Errors
// name only what the recipient sees.
func (c *call) resolve() (*resolved, error) {
	ctx := c.r.Context()
	t, err := c.h.opts.Resolver.Table(ctx, c.rcpt, c.share, c.schema, c.table)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, notFound("table " + c.share + "." + c.schema + "." + c.table + " does not exist")
		}
		return nil, err
	}
	c.tbl = &t
	if t.IsView {
		return nil, unsupported("table " + c.share + "." + c.schema + "." + c.table +
			" is a view: Floe's Delta Sharing server serves tables only (read the view through the share's Iceberg REST catalog)")
	}
	st, err := c.h.opts.Tables.LoadTable(ctx, t.Warehouse, t.Ident)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			// Dropped behind the share: never name the real table.
			return nil, &apiError{status: 404, code: codeNotFound, msg: "table " + c.share + "." + c.schema + "." + c.table + " does not exist", err: err}
		}
		return nil, &apiError{status: 500, code: codeInternal, msg: "internal error", err: err}
	}
	return &resolved{t: t, state: st, hist: history(st.Metadata)}, nil
}

// history returns the snapshots of md's main branch, oldest first, with
// their Delta versions (see the package documentation).
func history(md table.Metadata) []histEntry {
	cur := md.CurrentSnapshot()
	var rev []*table.Snapshot
	for s := cur; s != nil && len(rev) <= len(md.Snapshots()); {
		rev = append(rev, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	out := make([]histEntry, len(rev))
	for i := range rev {
		s := rev[len(rev)-1-i]
		v := s.SequenceNumber
		if md.Version() < 2 || v <= 0 {
			v = int64(i + 1)
		}
		out[i] = histEntry{snap: s, version: v}
	}
	return out
}

// current returns the current version (0 for a table without snapshots).
func (rt *resolved) current() histEntry {
	if len(rt.hist) == 0 {
		return histEntry{}
	}
	return rt.hist[len(rt.hist)-1]
}

// at selects the version a request asks for with version or timestamp
// (neither: the current one).
func (c *call) at(rt *resolved, version *int64, timestamp string) (histEntry, error) {
	name := c.share + "." + c.schema + "." + c.table
	if version == nil && timestamp == "" {
		return rt.current(), nil
	}
	if version != nil && timestamp != "" {
		return histEntry{}, invalid("version and timestamp are mutually exclusive")
	}
	if !rt.t.History {
		return histEntry{}, invalid("table " + name + " is shared without history: only its current version can be read " +
			"(omit version and timestamp, or ask the provider to share it with history)")
	}
	if version != nil {
		if *version < 0 {
			return histEntry{}, invalid("version must not be negative")
		}
		for _, h := range rt.hist {
			if h.version == *version {
				return h, nil
			}
		}
		if *version == 0 && len(rt.hist) == 0 {
			return histEntry{}, nil
		}
		return histEntry{}, invalid("table " + name + " has no version " + strconv.FormatInt(*version, 10) + versionRange(rt))
	}
	ts, err := parseTimestamp(timestamp)
	if err != nil {
		return histEntry{}, err
	}
	if ts.After(c.h.opts.Now()) {
		return histEntry{}, invalid("timestamp " + timestamp + " is in the future")
	}
	var found *histEntry
	for i, h := range rt.hist {
		if h.snap.TimestampMs <= ts.UnixMilli() {
			found = &rt.hist[i]
		}
	}
	if found == nil {
		return histEntry{}, invalid("timestamp " + timestamp + " is before the earliest version of table " + name + versionRange(rt))
	}
	return *found, nil
}

func versionRange(rt *resolved) string {
	if len(rt.hist) == 0 {
		return " (it has no versions yet)"
	}
	first, last := rt.hist[0], rt.hist[len(rt.hist)-1]
	return " (versions " + strconv.FormatInt(first.version, 10) + " to " + strconv.FormatInt(last.version, 10) +
		", from " + time.UnixMilli(first.snap.TimestampMs).UTC().Format(time.RFC3339) + ")"
}

// parseTimestamp reads an ISO 8601 timestamp (RFC 3339, or a date).
func parseTimestamp(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, invalid("invalid timestamp")
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, invalid("invalid timestamp " + strconv.Quote(s) + ": use ISO 8601, e.g. 2022-01-01T00:00:00Z")
}

func (c *call) setVersion(v int64) {
	c.w.Header().Set("Delta-Table-Version", strconv.FormatInt(v, 10))
	c.detail["version"] = v
}

// tableVersion serves GET .../version and the legacy HEAD of the table.
func (c *call) tableVersion() (int, error) {
	rt, err := c.resolve()
	if err != nil {
		return 0, err
	}
	q := c.r.URL.Query()
	v := rt.current().version
	if s := q.Get("startingTimestamp"); s != "" {
		if !rt.t.History {
			return 0, invalid("table " + c.share + "." + c.schema + "." + c.table + " is shared without history: startingTimestamp is not allowed")
		}
		ts, err := parseTimestamp(s)
		if err != nil {
			return 0, err
		}
		found := false
		for _, h := range rt.hist {
			if h.snap.TimestampMs >= ts.UnixMilli() {
				v, found = h.version, true
				break
			}
		}
		if !found {
			return 0, invalid("startingTimestamp " + s + " is after the latest version" + versionRange(rt))
		}
	}
	c.setVersion(v)
	c.w.WriteHeader(http.StatusOK)
	return http.StatusOK, nil
}

// tableMetadata serves GET .../metadata.
func (c *call) tableMetadata() (int, error) {
	rt, err := c.resolve()
	if err != nil {
		return 0, err
	}
	q := c.r.URL.Query()
	var version *int64
	if s := q.Get("version"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, invalid("version must be an integer")
		}
		version = &n
	}
	if err := checkFormat(c.r); err != nil {
		return 0, err
	}
	h, err := c.at(rt, version, q.Get("timestamp"))
	if err != nil {
		return 0, err
	}
	l, err := c.h.listing(c.r.Context(), rt, h)
	if err != nil {
		return 0, err
	}
	c.startNDJSON(h.version)
	enc := json.NewEncoder(c.w)
	_ = enc.Encode(map[string]any{"protocol": protocolJSON{MinReaderVersion: 1}})
	_ = enc.Encode(map[string]any{"metaData": c.metaData(rt, l)})
	return http.StatusOK, nil
}

// startNDJSON writes the headers of an NDJSON answer.
func (c *call) startNDJSON(version int64) {
	c.setVersion(version)
	c.w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	c.w.Header().Set("Delta-Sharing-Capabilities", "responseformat=parquet")
	c.w.WriteHeader(http.StatusOK)
}

type protocolJSON struct {
	MinReaderVersion int `json:"minReaderVersion"`
}

type formatJSON struct {
	Provider string `json:"provider"`
}

type metaDataJSON struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Format           formatJSON        `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration,omitempty"`
	Version          *int64            `json:"version,omitempty"`
	Size             *int64            `json:"size,omitempty"`
	NumFiles         *int64            `json:"numFiles,omitempty"`
}

func (c *call) metaData(rt *resolved, l *listing) metaDataJSON {
	id := rt.t.ID
	if id == "" {
		id = rt.state.Metadata.TableUUID().String()
	}
	v, size, n := l.version, l.size, int64(len(l.files))
	md := metaDataJSON{ID: id, Name: rt.t.Name, Format: formatJSON{Provider: "parquet"}, SchemaString: l.schemaString,
		PartitionColumns: l.partitionColumns, Version: &v}
	if rt.t.PartitionFilter == "" {
		// A filtered table's totals would tell what lies outside the filter.
		md.Size, md.NumFiles = &size, &n
	}
	return md
}

// checkFormat honours the delta-sharing-capabilities header: Floe answers
// in the parquet format; a request that accepts only the delta format is
// refused.
func checkFormat(r *http.Request) error {
	caps := r.Header.Get("Delta-Sharing-Capabilities")
	if caps == "" {
		return nil
	}
	if len(caps) > 4096 {
		return invalid("delta-sharing-capabilities header too long")
	}
	for kv := range strings.SplitSeq(caps, ";") {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "responseformat") {
			continue
		}
		parquet := false
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "parquet") {
				parquet = true
			}
		}
		if !parquet {
			return unsupported("Floe serves Iceberg tables in the parquet response format only; the delta format is not " +
				"supported: ask for responseformat=parquet (or omit the delta-sharing-capabilities header)")
		}
	}
	return nil
}

// schemaOf returns the schema a version is read with: the table's current
// schema for the current snapshot (as Iceberg reads it), the snapshot's
// schema for an older one.
func schemaOf(md table.Metadata, h histEntry) *iceberg.Schema {
	if cur := md.CurrentSnapshot(); h.snap != nil && (cur == nil || cur.SnapshotID != h.snap.SnapshotID) && h.snap.SchemaID != nil {
		for _, s := range md.Schemas() {
			if s.ID == *h.snap.SchemaID {
				return s
			}
		}
	}
	return md.CurrentSchema()
}

// nameConflict says why files written with schema written cannot be read
// by name with schema read ("" when they can): a column renamed (clients
// would read nulls), or a name given to another column (clients would read
// the old column's values). Names compare case-insensitively, as Delta
// Sharing clients match them.
func nameConflict(written, read *iceberg.Schema) string {
	if written.ID == read.ID {
		return ""
	}
	for id := 1; id <= max(written.HighestFieldID(), read.HighestFieldID()); id++ {
		now, inRead := read.FindColumnName(id)
		then, inWritten := written.FindColumnName(id)
		if inRead && inWritten && !strings.EqualFold(now, then) {
			return "column " + now + " was renamed from " + then
		}
		if inWritten {
			if f, ok := read.FindFieldByNameCaseInsensitive(then); ok && f.ID != id {
				return "column " + then + " was dropped and added again (or its name given to another column)"
			}
		}
	}
	return ""
}
