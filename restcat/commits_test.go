package restcat_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit"
)

type tableMeta struct {
	UUID              string            `json:"table-uuid"`
	FormatVersion     int               `json:"format-version"`
	Location          string            `json:"location"`
	LastColumnID      int               `json:"last-column-id"`
	CurrentSchemaID   int               `json:"current-schema-id"`
	DefaultSpecID     int               `json:"default-spec-id"`
	LastPartitionID   int               `json:"last-partition-id"`
	DefaultSortOrder  int               `json:"default-sort-order-id"`
	CurrentSnapshotID *int64            `json:"current-snapshot-id"`
	LastSeq           int64             `json:"last-sequence-number"`
	Properties        map[string]string `json:"properties"`
	Schemas           []json.RawMessage `json:"schemas"`
	Specs             []json.RawMessage `json:"partition-specs"`
	SortOrders        []json.RawMessage `json:"sort-orders"`
	Snapshots         []struct {
		ID int64 `json:"snapshot-id"`
	} `json:"snapshots"`
	SnapshotLog []struct {
		ID int64 `json:"snapshot-id"`
	} `json:"snapshot-log"`
	MetadataLog []json.RawMessage          `json:"metadata-log"`
	Refs        map[string]json.RawMessage `json:"refs"`
	Statistics  []json.RawMessage          `json:"statistics"`
	PartStats   []json.RawMessage          `json:"partition-statistics"`
	EncKeys     []json.RawMessage          `json:"encryption-keys"`
}

func loadMeta(t *testing.T, f *testkit.Floe, path string) tableMeta {
	t.Helper()
	r := f.Do(t, "GET", f.P(path), nil)
	mustStatus(t, r, 200)
	var out struct {
		Metadata tableMeta `json:"metadata"`
	}
	r.JSON(t, &out)
	return out.Metadata
}

var snapshotJSON = testkit.SnapshotJSON

// TestCommitUpdates applies every TableUpdate type the spec defines, one commit each.
func TestCommitUpdates(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["c"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/c/tables"), createTableBody("t", "")), 200)
	m := loadMeta(t, f, "/namespaces/c/tables/t")
	path := "/namespaces/c/tables/t"
	one := int64(1)
	list := f.EmptyManifestList(t, m.Location+"/moved")
	steps := []struct {
		name, updates string
		check         func(m tableMeta) bool
	}{
		{"assign-uuid (same uuid)", fmt.Sprintf(`[{"action":"assign-uuid","uuid":%q}]`, m.UUID), func(x tableMeta) bool { return x.UUID == m.UUID }},
		{"add-schema + set-current-schema", `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"ts","required":false,"type":"timestamptz"},{"id":3,"name":"category","required":false,"type":"string"},{"id":4,"name":"extra","required":false,"type":"string"}]}},{"action":"set-current-schema","schema-id":-1}]`,
			func(x tableMeta) bool { return len(x.Schemas) == 2 && x.LastColumnID == 4 && x.CurrentSchemaID == 1 }},
		{"add-spec + set-default-spec", `[{"action":"add-spec","spec":{"spec-id":1,"fields":[{"source-id":2,"field-id":1001,"name":"ts_day","transform":"day"}]}},{"action":"set-default-spec","spec-id":-1}]`,
			func(x tableMeta) bool { return len(x.Specs) == 2 && x.DefaultSpecID == 1 }},
		{"add-sort-order + set-default-sort-order", `[{"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}},{"action":"set-default-sort-order","sort-order-id":-1}]`,
			func(x tableMeta) bool { return len(x.SortOrders) == 2 && x.DefaultSortOrder == 1 }},
		{"set-current-schema by id", `[{"action":"set-current-schema","schema-id":0}]`, func(x tableMeta) bool { return x.CurrentSchemaID == 0 }},
		{"set-current-schema back", `[{"action":"set-current-schema","schema-id":1}]`, func(x tableMeta) bool { return x.CurrentSchemaID == 1 }},
		{"set-default-spec by id", `[{"action":"set-default-spec","spec-id":1}]`, func(x tableMeta) bool { return x.DefaultSpecID == 1 }},
		{"set-default-sort-order by id", `[{"action":"set-default-sort-order","sort-order-id":1}]`, func(x tableMeta) bool { return x.DefaultSortOrder == 1 }},
		// set-location before any snapshot: a table with snapshots may move
		// only where its files already are.
		{"set-location", fmt.Sprintf(`[{"action":"set-location","location":%q}]`, m.Location+"/moved"), func(x tableMeta) bool { return strings.HasSuffix(x.Location, "/moved") }},
		{"add-snapshot + set-snapshot-ref", `[{"action":"add-snapshot","snapshot":` + snapshotJSON(list, 1, nil, 1) + `},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":1}]`,
			func(x tableMeta) bool {
				return x.CurrentSnapshotID != nil && *x.CurrentSnapshotID == 1 && x.LastSeq == 1 && len(x.SnapshotLog) == 1
			}},
		{"set-snapshot-ref tag", `[{"action":"set-snapshot-ref","ref-name":"v1","type":"tag","snapshot-id":1,"max-ref-age-ms":86400000}]`, func(x tableMeta) bool { return x.Refs["v1"] != nil }},
		{"remove-snapshot-ref", `[{"action":"remove-snapshot-ref","ref-name":"v1"}]`, func(x tableMeta) bool { return x.Refs["v1"] == nil }},
		{"add second snapshot", `[{"action":"add-snapshot","snapshot":` + snapshotJSON(list, 2, &one, 2) + `},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":2}]`, func(x tableMeta) bool { return len(x.Snapshots) == 2 }},
		{"remove-snapshots", `[{"action":"remove-snapshots","snapshot-ids":[1]}]`, func(x tableMeta) bool { return len(x.Snapshots) == 1 && x.Snapshots[0].ID == 2 }},
		{"set-properties", `[{"action":"set-properties","updates":{"k1":"v1","k2":"v2"}}]`, func(x tableMeta) bool { return x.Properties["k1"] == "v1" }},
		{"remove-properties", `[{"action":"remove-properties","removals":["k1"]}]`, func(x tableMeta) bool { _, ok := x.Properties["k1"]; return !ok && x.Properties["k2"] == "v2" }},
		{"set-statistics", `[{"action":"set-statistics","snapshot-id":2,"statistics":{"snapshot-id":2,"statistics-path":"` + m.Location + `/moved/metadata/s.puffin","file-size-in-bytes":10,"file-footer-size-in-bytes":5,"blob-metadata":[]}}]`, func(x tableMeta) bool { return len(x.Statistics) == 1 }},
		{"remove-statistics", `[{"action":"remove-statistics","snapshot-id":2}]`, func(x tableMeta) bool { return len(x.Statistics) == 0 }},
		{"set-partition-statistics", `[{"action":"set-partition-statistics","partition-statistics":{"snapshot-id":2,"statistics-path":"` + m.Location + `/moved/metadata/p.parquet","file-size-in-bytes":10}}]`, func(x tableMeta) bool { return len(x.PartStats) == 1 }},
		{"remove-partition-statistics", `[{"action":"remove-partition-statistics","snapshot-id":2}]`, func(x tableMeta) bool { return len(x.PartStats) == 0 }},
		{"remove-partition-specs", `[{"action":"remove-partition-specs","spec-ids":[0]}]`, func(x tableMeta) bool { return len(x.Specs) == 1 }},
		{"remove-schemas", `[{"action":"remove-schemas","schema-ids":[0]}]`, func(x tableMeta) bool { return len(x.Schemas) == 1 }},
		{"upgrade-format-version", `[{"action":"upgrade-format-version","format-version":3}]`, func(x tableMeta) bool { return x.FormatVersion == 3 }},
		{"add-encryption-key", `[{"action":"add-encryption-key","encryption-key":{"key-id":"k1","encrypted-key-metadata":"AAEC"}}]`, func(x tableMeta) bool { return len(x.EncKeys) == 1 }},
		{"remove-encryption-key", `[{"action":"remove-encryption-key","key-id":"k1"}]`, func(x tableMeta) bool { return len(x.EncKeys) == 0 }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := f.Do(t, "POST", f.P(path), `{"requirements":[],"updates":`+s.updates+`}`)
			mustStatus(t, r, 200)
			var resp struct {
				Metadata tableMeta `json:"metadata"`
			}
			r.JSON(t, &resp)
			if !s.check(resp.Metadata) {
				t.Errorf("update not applied: %s", r.Body)
			}
			if got := loadMeta(t, f, path); !s.check(got) {
				t.Errorf("update not visible on reload")
			}
		})
	}
	// Three steps change nothing (same uuid; spec and sort order already the
	// default) and so write no metadata file; every other step adds one entry.
	if got := loadMeta(t, f, path); len(got.MetadataLog) != len(steps)-3 {
		t.Errorf("metadata-log has %d entries after %d changing commits", len(got.MetadataLog), len(steps)-3)
	}
}

// TestCommitRequirements checks every TableRequirement type, passing and failing.
func TestCommitRequirements(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["r"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/r/tables"), createTableBody("t", "")), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/r/tables/t"), `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":`+snapshotJSON(f.EmptyManifestList(t, f.TableLocation(t, "/namespaces/r/tables/t")), 7, nil, 1)+`},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7}]}`), 200)
	m := loadMeta(t, f, "/namespaces/r/tables/t")
	reqs := []struct {
		name, pass, fail, msg string
	}{
		{"assert-table-uuid", fmt.Sprintf(`{"type":"assert-table-uuid","uuid":%q}`, m.UUID), `{"type":"assert-table-uuid","uuid":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}`, "UUID"},
		{"assert-ref-snapshot-id", `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":7}`, `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":8}`, "has changed"},
		{"assert-ref-snapshot-id null", `{"type":"assert-ref-snapshot-id","ref":"dev","snapshot-id":null}`, `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`, "was created concurrently"},
		{"assert-last-assigned-field-id", fmt.Sprintf(`{"type":"assert-last-assigned-field-id","last-assigned-field-id":%d}`, m.LastColumnID), `{"type":"assert-last-assigned-field-id","last-assigned-field-id":99}`, "last assigned field id"},
		{"assert-current-schema-id", `{"type":"assert-current-schema-id","current-schema-id":0}`, `{"type":"assert-current-schema-id","current-schema-id":5}`, "schema"},
		{"assert-last-assigned-partition-id", fmt.Sprintf(`{"type":"assert-last-assigned-partition-id","last-assigned-partition-id":%d}`, m.LastPartitionID), `{"type":"assert-last-assigned-partition-id","last-assigned-partition-id":1}`, "partition"},
		{"assert-default-spec-id", `{"type":"assert-default-spec-id","default-spec-id":0}`, `{"type":"assert-default-spec-id","default-spec-id":3}`, "spec"},
		{"assert-default-sort-order-id", `{"type":"assert-default-sort-order-id","default-sort-order-id":0}`, `{"type":"assert-default-sort-order-id","default-sort-order-id":4}`, "sort order"},
		{"assert-create", ``, `{"type":"assert-create"}`, "already exists"},
	}
	for i, rq := range reqs {
		t.Run(rq.name, func(t *testing.T) {
			if rq.pass != "" {
				mustStatus(t, f.Do(t, "POST", f.P("/namespaces/r/tables/t"), fmt.Sprintf(`{"requirements":[%s],"updates":[{"action":"set-properties","updates":{"step":"%d"}}]}`, rq.pass, i)), 200)
			}
			before := loadMeta(t, f, "/namespaces/r/tables/t")
			r := f.Do(t, "POST", f.P("/namespaces/r/tables/t"), fmt.Sprintf(`{"requirements":[%s],"updates":[{"action":"set-properties","updates":{"bad":"%d"}}]}`, rq.fail, i))
			wantErr(t, r, 409, "CommitFailedException", rq.msg)
			if after := loadMeta(t, f, "/namespaces/r/tables/t"); after.Properties["bad"] != "" || len(after.MetadataLog) != len(before.MetadataLog) {
				t.Error("a failed requirement changed the table")
			}
		})
	}
}

// TestStageCreate follows the stage-create flow that create transactions use.
func TestStageCreate(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["s"]}`), 200)
	r := f.Do(t, "POST", f.P("/namespaces/s/tables"), createTableBody("staged", `,"stage-create":true`))
	mustStatus(t, r, 200)
	var staged struct {
		MetadataLocation *string   `json:"metadata-location"`
		Metadata         tableMeta `json:"metadata"`
	}
	r.JSON(t, &staged)
	if staged.MetadataLocation != nil {
		t.Fatalf("staged create has a metadata location %q", *staged.MetadataLocation)
	}
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/s/tables/staged"), nil), 404)
	commit := fmt.Sprintf(`{"requirements":[{"type":"assert-create"}],"updates":[
	 {"action":"assign-uuid","uuid":%q},{"action":"upgrade-format-version","format-version":2},
	 {"action":"add-schema","schema":%s},{"action":"set-current-schema","schema-id":-1},
	 {"action":"add-spec","spec":{"spec-id":0,"fields":[]}},{"action":"set-default-spec","spec-id":-1},
	 {"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
	 {"action":"set-location","location":%q},{"action":"set-properties","updates":{"created":"staged"}}]}`, staged.Metadata.UUID, schemaJSON, staged.Metadata.Location)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/s/tables/staged"), commit), 200)
	m := loadMeta(t, f, "/namespaces/s/tables/staged")
	if m.UUID != staged.Metadata.UUID || m.Properties["created"] != "staged" {
		t.Errorf("staged table %+v", m)
	}
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/s/tables/staged"), commit), 409, "CommitFailedException", "already exists")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/s/tables/x"), `{"requirements":[{"type":"assert-create"},{"type":"assert-current-schema-id","current-schema-id":0}],"updates":[]}`), 400, "BadRequestException", "assert-create")
}

// TestTransactions checks that multi-table commits are all-or-nothing.
func TestTransactions(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["tx"]}`), 200)
	for _, n := range []string{"a", "b"} {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/tx/tables"), createTableBody(n, "")), 200)
	}
	a, b := loadMeta(t, f, "/namespaces/tx/tables/a"), loadMeta(t, f, "/namespaces/tx/tables/b")
	change := func(name, uuid, val string) string {
		return fmt.Sprintf(`{"identifier":{"namespace":["tx"],"name":%q},"requirements":[{"type":"assert-table-uuid","uuid":%q}],"updates":[{"action":"set-properties","updates":{"v":%q}}]}`, name, uuid, val)
	}
	// b's requirement fails: neither table changes
	r := f.Do(t, "POST", f.P("/transactions/commit"), `{"table-changes":[`+change("a", a.UUID, "1")+`,`+change("b", a.UUID, "1")+`]}`)
	wantErr(t, r, 409, "CommitFailedException", "UUID")
	if loadMeta(t, f, "/namespaces/tx/tables/a").Properties["v"] != "" {
		t.Fatal("transaction partially applied")
	}
	wantErr(t, f.Do(t, "POST", f.P("/transactions/commit"), `{"table-changes":[`+change("a", a.UUID, "1")+`,`+change("ghost", a.UUID, "1")+`]}`), 404, "NoSuchTableException", "tx.ghost")
	wantErr(t, f.Do(t, "POST", f.P("/transactions/commit"), `{"table-changes":[`+change("a", a.UUID, "1")+`,`+change("a", a.UUID, "2")+`]}`), 400, "BadRequestException", "more than once")
	mustStatus(t, f.Do(t, "POST", f.P("/transactions/commit"), `{"table-changes":[`+change("a", a.UUID, "2")+`,`+change("b", b.UUID, "2")+`]}`), 204)
	if loadMeta(t, f, "/namespaces/tx/tables/a").Properties["v"] != "2" || loadMeta(t, f, "/namespaces/tx/tables/b").Properties["v"] != "2" {
		t.Fatal("transaction not applied to both tables")
	}
}

func TestViews(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["v"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/v/tables"), createTableBody("tbl", "")), 200)
	view := func(name, sql string) string {
		return fmt.Sprintf(`{"name":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"n","required":false,"type":"long"}]},
		 "view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["v"],
		 "representations":[{"type":"sql","sql":%q,"dialect":"spark"}]},"properties":{"comment":"c"}}`, name, time.Now().UnixMilli(), sql)
	}
	r := f.Do(t, "POST", f.P("/namespaces/v/views"), view("top", "select count(*) as n from tbl"))
	mustStatus(t, r, 200)
	var lv struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			UUID    string `json:"view-uuid"`
			Current int    `json:"current-version-id"`
		} `json:"metadata"`
	}
	r.JSON(t, &lv)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/v/views"), view("top", "select 1")), 409, "AlreadyExistsException", "View already exists: v.top")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/v/views"), view("tbl", "select 1")), 409, "AlreadyExistsException", "Table with same name already exists: v.tbl")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/v/tables"), createTableBody("top", "")), 409, "AlreadyExistsException", "View with same name already exists: v.top")
	mustStatus(t, f.Do(t, "GET", f.P("/namespaces/v/views/top"), nil), 200)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/v/views/top"), nil), 204)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/v/views/tbl"), nil), 404)
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/v/views/ghost"), nil), 404, "NoSuchViewException", "View does not exist: v.ghost")
	var lst struct {
		Identifiers []struct{ Name string } `json:"identifiers"`
	}
	f.Do(t, "GET", f.P("/namespaces/v/views"), nil).JSON(t, &lst)
	if len(lst.Identifiers) != 1 || lst.Identifiers[0].Name != "top" {
		t.Errorf("listViews %v", lst)
	}
	// replace: add a version and make it current
	replace := fmt.Sprintf(`{"requirements":[{"type":"assert-view-uuid","uuid":%q}],"updates":[
	 {"action":"add-view-version","view-version":{"version-id":2,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["v"],"representations":[{"type":"sql","sql":"select 2 as n","dialect":"spark"}]}},
	 {"action":"set-current-view-version","view-version-id":-1},{"action":"set-properties","updates":{"k":"v"}}]}`, lv.Metadata.UUID, time.Now().UnixMilli())
	r = f.Do(t, "POST", f.P("/namespaces/v/views/top"), replace)
	mustStatus(t, r, 200)
	var rv struct {
		Metadata struct {
			Current int `json:"current-version-id"`
		} `json:"metadata"`
	}
	r.JSON(t, &rv)
	if rv.Metadata.Current != 2 {
		t.Errorf("current version %d after replace", rv.Metadata.Current)
	}
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/v/views/top"), `{"requirements":[{"type":"assert-view-uuid","uuid":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}],"updates":[{"action":"set-properties","updates":{"x":"y"}}]}`), 409, "CommitFailedException", "Requirement failed")
	// namespace with a view is not empty
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/v/tables/tbl"), nil), 204)
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/v"), nil), 409, "NamespaceNotEmptyException", "not empty")
	// rename, drop, register
	mustStatus(t, f.Do(t, "POST", f.P("/views/rename"), `{"source":{"namespace":["v"],"name":"top"},"destination":{"namespace":["v"],"name":"top2"}}`), 204)
	r = f.Do(t, "GET", f.P("/namespaces/v/views/top2"), nil)
	mustStatus(t, r, 200)
	var cur struct {
		MetadataLocation string `json:"metadata-location"`
	}
	r.JSON(t, &cur)
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/v/views/top2"), nil), 204)
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/v/views/top2"), nil), 404, "NoSuchViewException", "v.top2")
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/v/register-view"), map[string]string{"name": "back", "metadata-location": cur.MetadataLocation}), 200)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/v/views/back"), nil), 204)
}
