package maint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

var testNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// snap is a snapshot in a test table: id, parent (0: none), age.
type snap struct {
	id, parent int64
	age        time.Duration
}

// ref is a branch or tag in a test table, with optional retention overrides.
type ref struct {
	typ      string
	id       int64
	minKeep  *int
	maxAgeMs *int64
}

// testMetadata builds v2 metadata holding snaps (in order) and refs.
func testMetadata(t *testing.T, props map[string]string, snaps []snap, refs map[string]ref) table.Metadata {
	t.Helper()
	var ss []string
	for i, s := range snaps {
		p := ""
		if s.parent != 0 {
			p = fmt.Sprintf(`"parent-snapshot-id":%d,`, s.parent)
		}
		ts := testNow.Add(-s.age).UnixMilli()
		ss = append(ss, fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,"manifest-list":"file:///t/snap-%d.avro","summary":{"operation":"append"},"schema-id":0}`,
			s.id, p, i+1, ts, s.id))
	}
	rs := map[string]any{}
	current := "null"
	for name, r := range refs {
		m := map[string]any{"snapshot-id": r.id, "type": r.typ}
		if r.minKeep != nil {
			m["min-snapshots-to-keep"] = *r.minKeep
		}
		if r.maxAgeMs != nil {
			m["max-snapshot-age-ms"] = *r.maxAgeMs
		}
		rs[name] = m
		if name == "main" {
			current = fmt.Sprint(r.id)
		}
	}
	rj, _ := json.Marshal(rs)
	pj, _ := json.Marshal(props)
	if props == nil {
		pj = []byte("{}")
	}
	raw := fmt.Sprintf(`{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"file:///t",
		"last-sequence-number":%d,"last-updated-ms":%d,"last-column-id":1,
		"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}],
		"current-schema-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,
		"sort-orders":[{"order-id":0,"fields":[]}],"default-sort-order-id":0,"properties":%s,
		"current-snapshot-id":%s,"snapshots":[%s],"snapshot-log":[],"metadata-log":[],"refs":%s}`,
		len(snaps), testNow.UnixMilli(), pj, current, strings.Join(ss, ","), rj)
	md, err := table.ParseMetadataBytes([]byte(raw))
	if err != nil {
		t.Fatalf("parse test metadata: %v\n%s", err, raw)
	}
	return md
}

func ptr[T any](v T) *T { return &v }

func TestExpiredSnapshots(t *testing.T) {
	// 1 <- 2 <- 3 <- 4 <- 5, aged 10, 9, 8, 2 and 1 days.
	chain := []snap{{1, 0, 10 * day}, {2, 1, 9 * day}, {3, 2, 8 * day}, {4, 3, 2 * day}, {5, 4, day}}
	main := map[string]ref{"main": {typ: "branch", id: 5}}
	def := Retention{MaxAge: DefaultMaxSnapshotAge, MinKeep: DefaultMinSnapshotsToKeep}
	tests := []struct {
		name  string
		props map[string]string
		snaps []snap
		refs  map[string]ref
		ret   Retention
		want  []int64
	}{
		{name: "NoSnapshots", ret: def},
		{name: "Default", snaps: chain, refs: main, ret: def, want: []int64{1, 2, 3}},
		{name: "AllYoung", snaps: chain, refs: main, ret: Retention{MaxAge: 30 * day, MinKeep: 1}},
		{name: "CurrentKeptWhenOld", snaps: chain[:3], refs: map[string]ref{"main": {typ: "branch", id: 3}}, ret: def, want: []int64{1, 2}},
		{name: "CurrentKeptWithMinKeepZero", snaps: chain[:3], refs: map[string]ref{"main": {typ: "branch", id: 3}},
			ret: Retention{MaxAge: day, MinKeep: 0}, want: []int64{1, 2}},
		{name: "ZeroMaxAge", snaps: chain, refs: main, ret: Retention{MaxAge: 0, MinKeep: 1}, want: []int64{1, 2, 3, 4}},
		{name: "MinKeepProperty", props: map[string]string{PropMinSnapshotsToKeep: "3"}, snaps: chain, refs: main, ret: def, want: []int64{1, 2}},
		{name: "MaxAgeProperty", props: map[string]string{PropMaxSnapshotAge: fmt.Sprint((9*day + day/2).Milliseconds())}, snaps: chain, refs: main, ret: def, want: []int64{1}},
		{name: "MalformedPropertiesIgnored", props: map[string]string{PropMaxSnapshotAge: "soon", PropMinSnapshotsToKeep: "-2"}, snaps: chain, refs: main, ret: def, want: []int64{1, 2, 3}},
		{name: "TagKept", snaps: chain, refs: map[string]ref{"main": {typ: "branch", id: 5}, "v1": {typ: "tag", id: 2}}, ret: def, want: []int64{1, 3}},
		{name: "OldBranchHeadKept", snaps: chain, refs: map[string]ref{"main": {typ: "branch", id: 5}, "audit": {typ: "branch", id: 2}}, ret: def, want: []int64{1, 3}},
		{name: "BranchMinKeep", snaps: chain, refs: map[string]ref{"main": {typ: "branch", id: 5}, "audit": {typ: "branch", id: 2, minKeep: ptr(2)}}, ret: def, want: []int64{3}},
		{name: "BranchMaxAge", snaps: chain, refs: map[string]ref{"main": {typ: "branch", id: 5, maxAgeMs: ptr((30 * day).Milliseconds())}}, ret: def},
		{name: "UnreferencedOld", snaps: append(slices.Clone(chain), snap{6, 3, 7 * day}), refs: main, ret: def, want: []int64{1, 2, 3, 6}},
		{name: "UnreferencedYoung", snaps: append(slices.Clone(chain), snap{6, 3, 3 * day}), refs: main, ret: def, want: []int64{1, 2, 3}},
		{name: "StopsAtFirstExpiredAncestor", // 2 is younger than 3 (clock skew) but past the stop
			snaps: []snap{{1, 0, 10 * day}, {2, 1, 3 * day}, {3, 2, 8 * day}, {4, 3, day}},
			refs:  map[string]ref{"main": {typ: "branch", id: 4}}, ret: def, want: []int64{1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := testMetadata(t, tt.props, tt.snaps, tt.refs)
			got := ExpiredSnapshots(md, testNow, tt.ret.For(md.Properties()))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ExpiredSnapshots = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExpiryRequirements(t *testing.T) {
	chain := []snap{{1, 0, 10 * day}, {2, 1, 9 * day}}
	md := testMetadata(t, nil, chain, map[string]ref{"main": {typ: "branch", id: 2}, "v1": {typ: "tag", id: 1}})
	reqs := expiryRequirements(md)
	for _, r := range reqs {
		if err := r.Validate(md); err != nil {
			t.Errorf("%s fails on the metadata it was made from: %v", r.GetType(), err)
		}
	}
	for _, tt := range []struct {
		name string
		refs map[string]ref
		want string
	}{
		{"MainMoved", map[string]ref{"main": {typ: "branch", id: 1}, "v1": {typ: "tag", id: 1}}, "changed"},
		{"TagMoved", map[string]ref{"main": {typ: "branch", id: 2}, "v1": {typ: "tag", id: 2}}, "changed"},
		{"TagDropped", map[string]ref{"main": {typ: "branch", id: 2}}, "missing"},
		{"RefAdded", map[string]ref{"main": {typ: "branch", id: 2}, "v1": {typ: "tag", id: 1}, "new": {typ: "tag", id: 1}}, "changed concurrently"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := testMetadata(t, nil, chain, tt.refs)
			var errs []string
			for _, r := range reqs {
				if err := r.Validate(other); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if len(errs) == 0 || !strings.Contains(strings.Join(errs, "; "), tt.want) {
				t.Errorf("requirement failures %q, want one mentioning %q", errs, tt.want)
			}
		})
	}
	// A table without snapshots asserts main is absent.
	empty := testMetadata(t, nil, nil, nil)
	reqs = expiryRequirements(empty)
	if err := reqs[1].Validate(md); err == nil {
		t.Errorf("%s for an empty table accepts a table with main", reqs[1].GetType())
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"}, // é is 2 bytes: cut before the second one's tail
	} {
		if got := truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
