package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// metadataJSON renders table metadata (format 2) with snaps snapshots whose
// summaries look like iceberg-go's appends, a schema of fields columns and
// logs metadata-log entries.
func metadataJSON(uuid string, snaps, fields, logs int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"format-version":2,"table-uuid":"%s","location":"s3://floe/ns/t-%s","last-sequence-number":%d,"last-updated-ms":1700000000000,"last-column-id":%d,`, uuid, uuid, snaps, fields)
	b.WriteString(`"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[`)
	for i := 1; i <= fields; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"column_%d","required":false,"type":"long"}`, i, i)
	}
	b.WriteString(`]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{"write.format.default":"parquet"}`)
	if snaps > 0 {
		b.WriteString(`,"snapshots":[`)
		for i := 1; i <= snaps; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			parent := ""
			if i > 1 {
				parent = fmt.Sprintf(`"parent-snapshot-id":%d,`, 1000+i-1)
			}
			fmt.Fprintf(&b, `{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,"manifest-list":"s3://floe/ns/t-%s/metadata/snap-%d-0-6f1f5c2e-9a7b-4c3d-8e2f-1a2b3c4d5e6f.avro","summary":{"operation":"append","added-data-files":"1","added-records":"1","added-files-size":"844","changed-partition-count":"1","total-records":"%d","total-files-size":"%d","total-data-files":"%d","total-delete-files":"0","total-position-deletes":"0","total-equality-deletes":"0"},"schema-id":0}`,
				1000+i, parent, i, 1700000000000+int64(i), uuid, 1000+i, i, 844*i, i)
		}
		fmt.Fprintf(&b, `],"current-snapshot-id":%d,"refs":{"main":{"snapshot-id":%d,"type":"branch"}},"snapshot-log":[`, 1000+snaps, 1000+snaps)
		for i := 1; i <= snaps; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"snapshot-id":%d,"timestamp-ms":%d}`, 1000+i, 1700000000000+int64(i))
		}
		b.WriteString(`]`)
	}
	if logs > 0 {
		b.WriteString(`,"metadata-log":[`)
		for i := 1; i <= logs; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metadata-file":"s3://floe/ns/t-%s/metadata/%05d-0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e.metadata.json","timestamp-ms":%d}`, uuid, i, 1700000000000+int64(i))
		}
		b.WriteString(`]`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// parseState parses raw as the catalog does and then touches everything a
// catalog user makes resident: every snapshot (a commit clones them all),
// the schema's lazy indexes and the refs-only JSON.
func parseState(t testing.TB, loc string, raw []byte) *TableState {
	t.Helper()
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	st := &TableState{Location: loc, Metadata: md, JSON: raw}
	_ = md.Snapshots()
	if sc := md.CurrentSchema(); sc != nil {
		_, _ = sc.FindFieldByID(1)
		_, _ = sc.FindColumnName(1)
		_, _ = sc.FindFieldByName("column_1")
		_, _ = sc.FindFieldByNameCaseInsensitive("COLUMN_1")
	}
	_ = st.RefsOnlyJSON()
	return st
}

// TestEstimateCoversResidentSize measures the heap that parsed table
// metadata really holds, for metadata dominated by snapshots, by schema
// fields and by the metadata log, and checks that the cache's estimate
// never undercounts it and overcounts it by at most 2.5x.
func TestEstimateCoversResidentSize(t *testing.T) {
	for _, tc := range []struct {
		name                string
		snaps, fields, logs int
	}{
		{"empty", 0, 2, 0},
		{"snapshots", 3000, 2, 100},
		{"few snapshots", 20, 5, 20},
		{"wide schema", 1, 2000, 1},
		{"metadata log", 1, 2, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := metadataJSON("8c0b3c4e-2b1a-4d6f-9e8d-7c6b5a493827", tc.snaps, tc.fields, tc.logs)
			copies := min(20000, max(8, (16<<20)/len(tmpl))) // enough that allocator and other goroutines' noise does not matter
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			raws := make([][]byte, copies) // the JSON is part of what an entry holds
			for i := range raws {
				raws[i] = bytes.Clone(tmpl)
			}
			states := make([]*TableState, copies)
			for i := range states {
				states[i] = parseState(t, fmt.Sprintf("loc-%d", i), raws[i])
			}
			raws = nil
			runtime.GC()
			runtime.ReadMemStats(&after)
			measured := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(copies)
			est := cached{table: states[0]}.size()
			runtime.KeepAlive(states)
			t.Logf("json %d B, measured %d B/entry (%.2fx json), estimate %d B (%.2fx measured)",
				len(tmpl), measured, float64(measured)/float64(len(tmpl)), est, float64(est)/float64(measured))
			if est < measured {
				t.Errorf("estimate %d B < measured %d B", est, measured)
			}
			if float64(est) > 2.5*float64(measured) {
				t.Errorf("estimate %d B > 2.5 x measured %d B", est, measured)
			}
		})
	}
}

// entry parses metadata of a table with snaps snapshots whose metadata log
// names prev.
func entry(t testing.TB, uuid string, snaps int, prev ...string) cached {
	t.Helper()
	raw := metadataJSON(uuid, snaps, 2, 0)
	if len(prev) > 0 {
		var log []string
		for i, p := range prev {
			log = append(log, fmt.Sprintf(`{"metadata-file":%q,"timestamp-ms":%d}`, p, 1700000000000+i))
		}
		raw = append(raw[:len(raw)-1], []byte(`,"metadata-log":[`+strings.Join(log, ",")+`]}`)...)
	}
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cached{table: &TableState{Location: "s3://floe/" + uuid, Metadata: md, JSON: raw}}
}

// TestMetaCacheBoundedByResidentEstimate fills the cache far past its bound
// and checks that the estimated resident memory never exceeds it, that the
// least recently used entries went first and that the accounting returns to
// zero when everything is evicted.
func TestMetaCacheBoundedByResidentEstimate(t *testing.T) {
	one := entry(t, "00000000-0000-4000-8000-000000000000", 50).size()
	const fit = 8
	m := newMetaCache(4096, fit*one+one/2)
	for i := range 100 {
		u := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		m.add(u, entry(t, u, 50))
		if got := m.resident(); got > m.maxBytes {
			t.Fatalf("after %d adds: resident estimate %d > bound %d", i+1, got, m.maxBytes)
		}
	}
	if got := m.c.Len(); got != fit {
		t.Errorf("cache holds %d entries, want %d", got, fit)
	}
	if m.c.Contains("00000000-0000-4000-8000-000000000000") {
		t.Error("the oldest entry is still cached")
	}
	if !m.c.Contains("00000000-0000-4000-8000-000000000099") {
		t.Error("the newest entry is not cached")
	}
	m.c.Purge()
	if got := m.resident(); got != 0 {
		t.Errorf("resident estimate %d after purge, want 0", got)
	}
}

// TestMetaCacheRefusesHugeEntry checks that one entry above a quarter of the
// bound is not cached (it would flush everything else).
func TestMetaCacheRefusesHugeEntry(t *testing.T) {
	small := entry(t, "00000000-0000-4000-8000-000000000001", 1)
	huge := entry(t, "00000000-0000-4000-8000-000000000002", 2000)
	m := newMetaCache(4096, 3*huge.size())
	m.add("small", small)
	m.add("huge", huge)
	if m.c.Contains("huge") || !m.c.Contains("small") {
		t.Errorf("huge cached %v, small cached %v; want false, true", m.c.Contains("huge"), m.c.Contains("small"))
	}
}

// TestMetaCacheDropsSupersededVersions commits 300 versions of one table
// into the cache, each naming the previous ones in its metadata log as a
// commit does, and checks that only the newest stays cached: caching every
// version would hold memory quadratic in the table's snapshot count.
func TestMetaCacheDropsSupersededVersions(t *testing.T) {
	m := newMetaCache(4096, 1<<40)
	var prev []string
	for i := range 300 {
		loc := fmt.Sprintf("s3://floe/ns/t/metadata/%05d.metadata.json", i)
		m.add(loc, entry(t, "8c0b3c4e-2b1a-4d6f-9e8d-7c6b5a493827", i+1, lastN(prev, 100)...))
		prev = append(prev, loc)
	}
	if got := m.c.Len(); got != 1 {
		t.Errorf("cache holds %d versions of one table, want 1", got)
	}
	if want := entry(t, "8c0b3c4e-2b1a-4d6f-9e8d-7c6b5a493827", 300, lastN(prev[:299], 100)...).size(); m.resident() != want {
		t.Errorf("resident estimate %d, want the newest version's %d", m.resident(), want)
	}
}

func lastN(s []string, n int) []string { return s[max(0, len(s)-n):] }

// TestEncodeMetadataMatchesMarshal checks that encodeMetadata writes the
// bytes json.Marshal writes, for each format version, with a history and
// properties holding characters json.Marshal escapes.
func TestEncodeMetadataMatchesMarshal(t *testing.T) {
	for _, version := range []string{"1", "2", "3"} {
		t.Run("v"+version, func(t *testing.T) {
			snaps := 20
			if version == "1" {
				snaps = 0 // the rendered snapshots carry v2 sequence numbers
			}
			raw := metadataJSON("3f6c1c2e-0000-4000-8000-00000000000"+version, snaps, 5, 3)
			raw = bytes.Replace(raw, []byte(`"format-version":2`), []byte(`"format-version":`+version), 1)
			switch version {
			case "1":
				raw = regexp.MustCompile(`"last-sequence-number":\d+,`).ReplaceAll(raw, nil)
			case "3":
				raw = bytes.Replace(raw, []byte(`"last-column-id"`), []byte(`"next-row-id":0,"last-column-id"`), 1)
			}
			raw = bytes.Replace(raw, []byte(`"write.format.default":"parquet"`), []byte(`"write.format.default":"parquet","note":"a <b> & 'c' \u2028"`), 1)
			md, err := table.ParseMetadataBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(md)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeMetadata(md)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encodeMetadata differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
		})
	}
}
