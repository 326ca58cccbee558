package restcat_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// stagedDuckDB stages a create of ns.name as DuckDB's iceberg extension does
// and returns the table's location and UUID from Floe's answer.
func stagedDuckDB(t *testing.T, f *testkit.Floe, ns, name string) (loc, uuid string) {
	t.Helper()
	r := f.Do(t, "POST", f.P("/namespaces/"+ns+"/tables"), fmt.Sprintf(`{"stage-create":true,"name":%q,
		"schema":{"type":"struct","fields":[{"name":"id","id":1,"type":"long","required":false},{"name":"name","id":2,"type":"string","required":false}],"schema-id":0},
		"partition-spec":{"spec-id":0,"type":"struct","fields":[]},"write-order":{"order-id":0,"fields":[]},"properties":{"format-version":"2"}}`, name))
	mustStatus(t, r, 200)
	var staged struct {
		Metadata struct {
			UUID     string `json:"table-uuid"`
			Location string `json:"location"`
		} `json:"metadata"`
	}
	r.JSON(t, &staged)
	return staged.Metadata.Location, staged.Metadata.UUID
}

// TestDuckDBCreateCommit: the assert-create commit DuckDB's CREATE TABLE
// sends (byte for byte but for the location and UUID), with
// set-current-schema after add-spec and add-sort-order, creates the table.
// Before issue 16 Floe answered 400 "invalid update add-spec: can't add sort
// order with no current schema".
func TestDuckDBCreateCommit(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["d"]}`), 200)
	tests := []struct {
		name, spec, specField string
	}{
		{"t1", `{"spec-id":0,"fields":[]}`, ""},
		// CREATE TABLE ... PARTITIONED BY (name): a partition field on the
		// schema that set-current-schema only selects at the end.
		{"t2", `{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"identity_name_2","transform":"identity"}]}`, "identity_name_2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loc, uuid := stagedDuckDB(t, f, "d", tc.name)
			body := fmt.Sprintf(`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"assign-uuid","uuid":%q},{"action":"upgrade-format-version","format-version":2},{"action":"add-schema","last-column-id":2,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"}],"identifier-field-ids":[]}},{"action":"add-spec","spec":%s},{"action":"set-default-spec","spec-id":0},{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":0},{"action":"set-location","location":%q},{"action":"set-properties","updates":{}},{"action":"set-current-schema","schema-id":0}],"identifier":{"name":%q,"namespace":["d"]}}`,
				uuid, tc.spec, loc, tc.name)
			mustStatus(t, f.Do(t, "POST", f.P("/namespaces/d/tables/"+tc.name), body), 200)
			m := loadMeta(t, f, "/namespaces/d/tables/"+tc.name)
			if m.UUID != uuid || m.Location != loc || m.CurrentSchemaID != 0 || m.DefaultSpecID != 0 || m.DefaultSortOrder != 0 || len(m.Schemas) != 1 {
				t.Fatalf("created metadata %+v", m)
			}
			if tc.specField != "" && (len(m.Specs) != 1 || !strings.Contains(string(m.Specs[0]), `"name":"`+tc.specField+`"`)) {
				t.Fatalf("partition specs %s, want field %s", m.Specs, tc.specField)
			}
		})
	}
}

// TestCreateCommitRefusedOrder: an order the reference refuses (a partition
// field before any schema) is refused as a BadRequestException, and no
// table is left behind.
func TestCreateCommitRefusedOrder(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["d"]}`), 200)
	loc, uuid := stagedDuckDB(t, f, "d", "t")
	body := fmt.Sprintf(`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"assign-uuid","uuid":%q},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"n","transform":"identity"}]}},{"action":"set-default-spec","spec-id":-1},
		{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"}]}},
		{"action":"set-current-schema","schema-id":-1},{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-location","location":%q}]}`, uuid, loc)
	r := f.Do(t, "POST", f.P("/namespaces/d/tables/t"), body)
	wantErr(t, r, 400, "BadRequestException", "add-spec")
	mustStatus(t, f.Do(t, "GET", f.P("/namespaces/d/tables/t"), nil), 404)
}
