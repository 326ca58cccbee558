package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// Schemas and updates for the update-order tests: a table (id, name) and a
// second version that adds a column region.
const (
	orderSchema0 = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"}]}`
	orderSchema1 = `{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"},{"id":3,"name":"region","required":false,"type":"string"}]}`

	uAssignUUID   = `{"action":"assign-uuid","uuid":"716db9ee-8d3a-404f-9de7-fb0bdb0a9bda"}`
	uFormat2      = `{"action":"upgrade-format-version","format-version":2}`
	uAddSchema0   = `{"action":"add-schema","last-column-id":2,"schema":` + orderSchema0 + `}`
	uAddSchema1   = `{"action":"add-schema","schema":` + orderSchema1 + `}`
	uCurSchemaL   = `{"action":"set-current-schema","schema-id":-1}`
	uCurSchema0   = `{"action":"set-current-schema","schema-id":0}`
	uSpecNone     = `{"action":"add-spec","spec":{"spec-id":0,"fields":[]}}`
	uSpecName     = `{"action":"add-spec","spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"name","transform":"identity"}]}}`
	uSpecRegion   = `{"action":"add-spec","spec":{"spec-id":1,"fields":[{"source-id":3,"field-id":1000,"name":"region","transform":"identity"}]}}`
	uSpecBucketID = `{"action":"add-spec","spec":{"spec-id":1,"fields":[{"source-id":1,"field-id":1001,"name":"id_bucket","transform":"bucket[4]"}]}}`
	uSpecMissing  = `{"action":"add-spec","spec":{"spec-id":0,"fields":[{"source-id":9,"field-id":1000,"name":"x","transform":"identity"}]}}`
	uDefSpecL     = `{"action":"set-default-spec","spec-id":-1}`
	uDefSpec0     = `{"action":"set-default-spec","spec-id":0}`
	uOrderNone    = `{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}}`
	uOrderID      = `{"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}}`
	uOrderRegion  = `{"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"source-id":3,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}}`
	uDefOrderL    = `{"action":"set-default-sort-order","sort-order-id":-1}`
	uDefOrder0    = `{"action":"set-default-sort-order","sort-order-id":0}`
	uLocation     = `{"action":"set-location","location":"s3://floe/d/t1"}`
	uPropsEmpty   = `{"action":"set-properties","updates":{}}`
)

// orderUpdates decodes updates given as JSON objects.
func orderUpdates(t *testing.T, objs ...string) table.Updates {
	t.Helper()
	var u table.Updates
	if err := json.Unmarshal([]byte("["+strings.Join(objs, ",")+"]"), &u); err != nil {
		t.Fatalf("decode updates: %v", err)
	}
	return u
}

// applyAll applies updates as a commit does: to an empty builder when base
// is nil (a create), else to a builder from base; then builds.
func applyAll(base table.Metadata, updates table.Updates) (table.Metadata, error) {
	var bld *table.MetadataBuilder
	var err error
	if base == nil {
		if bld, err = builderForCreate(updates); err != nil {
			return nil, err
		}
	} else if bld, err = table.MetadataBuilderFromBase(base, "s3://floe/d/t1/metadata/00000.metadata.json"); err != nil {
		return nil, err
	}
	if err := applyUpdates(bld, updates, base == nil); err != nil {
		return nil, err
	}
	return build(bld)
}

// layout is what a test checks of the built metadata.
type layout struct {
	schema, spec, order int // current schema, default spec and sort order ids
	specFields          []string
	orderFields         int
}

func layoutOf(md table.Metadata) layout {
	l := layout{schema: md.CurrentSchema().ID, spec: md.DefaultPartitionSpec(), order: md.DefaultSortOrder()}
	for _, s := range md.PartitionSpecs() {
		if s.ID() == l.spec {
			for _, f := range s.Fields() {
				l.specFields = append(l.specFields, f.Name)
			}
		}
	}
	for _, o := range md.SortOrders() {
		if o.OrderID() == l.order {
			l.orderFields = o.Len()
		}
	}
	return l
}

func sameLayout(a, b layout) bool {
	return a.schema == b.schema && a.spec == b.spec && a.order == b.order && a.orderFields == b.orderFields &&
		strings.Join(a.specFields, ",") == strings.Join(b.specFields, ",")
}

// TestCreateUpdateOrders: a create (an assert-create commit, applied to an
// empty builder) accepts the orders Apache Iceberg's reference
// TableMetadata.Builder accepts, with the same result, and refuses the
// orders it refuses as invalid (400).
func TestCreateUpdateOrders(t *testing.T) {
	tests := []struct {
		name    string
		updates []string
		want    layout
		errHas  string // non-empty: the create is refused as Invalid with this in the message
	}{
		{
			// What DuckDB's iceberg extension sends for CREATE TABLE: the
			// spec and sort order before set-current-schema, which comes last.
			name:    "duckdb: set-current-schema after add-spec and add-sort-order",
			updates: []string{uAssignUUID, uFormat2, uAddSchema0, uSpecNone, uDefSpec0, uOrderNone, uDefOrder0, uLocation, uPropsEmpty, uCurSchema0},
			want:    layout{schema: 0, spec: 0, order: 0},
		},
		{
			name:    "java and pyiceberg: set-current-schema right after add-schema",
			updates: []string{uAssignUUID, uFormat2, uAddSchema0, uCurSchemaL, uSpecNone, uDefSpecL, uOrderNone, uDefOrderL, uLocation},
			want:    layout{schema: 0, spec: 0, order: 0},
		},
		{
			name:    "partitioned and sorted against the schema being built, last-added ids",
			updates: []string{uAddSchema0, uSpecName, uDefSpecL, uOrderID, uDefOrderL, uCurSchemaL, uLocation},
			want:    layout{schema: 0, spec: 0, order: 1, specFields: []string{"name"}, orderFields: 1},
		},
		{
			name:    "no set-current-schema at all: the first schema is current",
			updates: []string{uAddSchema0, uSpecName, uDefSpecL, uOrderNone, uDefOrderL, uLocation},
			want:    layout{schema: 0, spec: 0, order: 0, specFields: []string{"name"}},
		},
		{
			name:    "unpartitioned spec and unsorted order before add-schema",
			updates: []string{uAssignUUID, uSpecNone, uDefSpecL, uOrderNone, uDefOrderL, uAddSchema0, uCurSchemaL, uLocation},
			want:    layout{schema: 0, spec: 0, order: 0},
		},
		{
			name:    "spec bound against the first schema, last added schema made current",
			updates: []string{uAddSchema0, uAddSchema1, uSpecName, uDefSpecL, uOrderNone, uDefOrderL, uCurSchemaL, uLocation},
			want:    layout{schema: 1, spec: 0, order: 0, specFields: []string{"name"}},
		},
		{
			name:    "refused: a partition field before any schema",
			updates: []string{uSpecName, uDefSpecL, uAddSchema0, uCurSchemaL, uOrderNone, uDefOrderL, uLocation},
			errHas:  "add-spec",
		},
		{
			name:    "refused: a sort field before any schema",
			updates: []string{uSpecNone, uDefSpecL, uOrderID, uDefOrderL, uAddSchema0, uCurSchemaL, uLocation},
			errHas:  "add-sort-order",
		},
		{
			name:    "refused: set-current-schema -1 before any add-schema",
			updates: []string{uCurSchemaL, uAddSchema0, uSpecNone, uDefSpecL, uOrderNone, uDefOrderL, uLocation},
			errHas:  "set-current-schema",
		},
		{
			name:    "refused: set-default-spec -1 before any add-spec",
			updates: []string{uAddSchema0, uCurSchemaL, uDefSpecL, uSpecNone, uOrderNone, uDefOrderL, uLocation},
			errHas:  "set-default-spec",
		},
		{
			name:    "refused: set-default-sort-order -1 before any add-sort-order",
			updates: []string{uAddSchema0, uCurSchemaL, uSpecNone, uDefSpecL, uDefOrderL, uOrderNone, uLocation},
			errHas:  "set-default-sort-order",
		},
		{
			name:    "refused: a partition field on a column the schema lacks",
			updates: []string{uAddSchema0, uSpecMissing, uDefSpecL, uOrderNone, uDefOrderL, uCurSchemaL, uLocation},
			errHas:  "add-spec",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md, err := applyAll(nil, orderUpdates(t, tc.updates...))
			if tc.errHas != "" {
				if err == nil {
					t.Fatalf("accepted, want refused (%s)", tc.errHas)
				}
				if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v (kind %v), want Invalid mentioning %q", err, floe.KindOf(err), tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := layoutOf(md); !sameLayout(got, tc.want) {
				t.Fatalf("layout %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestUpdateTableUpdateOrders: a commit to an existing table accepts and
// refuses the orders the reference does: add-spec and add-sort-order bind
// against the schema that is current when they are applied, so a field on a
// column that only the not-yet-current schema has is refused.
func TestUpdateTableUpdateOrders(t *testing.T) {
	base, err := applyAll(nil, orderUpdates(t, uAddSchema0, uCurSchemaL, uSpecNone, uDefSpecL, uOrderNone, uDefOrderL, uLocation))
	if err != nil {
		t.Fatalf("base: %v", err)
	}
	tests := []struct {
		name    string
		updates []string
		want    layout
		errHas  string
	}{
		{
			name:    "new schema made current, then a spec and an order on its new column",
			updates: []string{uAddSchema1, uCurSchemaL, uSpecRegion, uDefSpecL, uOrderRegion, uDefOrderL},
			want:    layout{schema: 1, spec: 1, order: 1, specFields: []string{"region"}, orderFields: 1},
		},
		{
			name:    "set-current-schema after add-spec and add-sort-order on old columns",
			updates: []string{uAddSchema1, uSpecBucketID, uDefSpecL, uOrderID, uDefOrderL, uCurSchemaL},
			want:    layout{schema: 1, spec: 1, order: 1, specFields: []string{"id_bucket"}, orderFields: 1},
		},
		{
			name:    "refused: a spec on the new column before the new schema is current",
			updates: []string{uAddSchema1, uSpecRegion, uDefSpecL, uCurSchemaL},
			errHas:  "add-spec",
		},
		{
			name:    "refused: an order on the new column before the new schema is current",
			updates: []string{uAddSchema1, uOrderRegion, uDefOrderL, uCurSchemaL},
			errHas:  "add-sort-order",
		},
		{
			name:    "refused: set-default-spec -1 with no spec added in this commit",
			updates: []string{uDefSpecL},
			errHas:  "set-default-spec",
		},
		{
			name:    "refused: set-current-schema -1 with no schema added in this commit",
			updates: []string{uCurSchemaL},
			errHas:  "set-current-schema",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md, err := applyAll(base, orderUpdates(t, tc.updates...))
			if tc.errHas != "" {
				if err == nil {
					t.Fatalf("accepted, want refused (%s)", tc.errHas)
				}
				if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v (kind %v), want Invalid mentioning %q", err, floe.KindOf(err), tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := layoutOf(md); !sameLayout(got, tc.want) {
				t.Fatalf("layout %+v, want %+v", got, tc.want)
			}
		})
	}
}

// BenchmarkApplyCreateUpdates times applying a create's updates (the order
// Java and PyIceberg send, which iceberg-go accepts as it is) through
// applyUpdates and through iceberg-go's builder directly: the difference is
// what the reference-order layer costs a create.
func BenchmarkApplyCreateUpdates(b *testing.B) {
	var raw table.Updates
	objs := []string{uAssignUUID, uFormat2, uAddSchema0, uCurSchemaL, uSpecName, uDefSpecL, uOrderID, uDefOrderL, uLocation}
	if err := json.Unmarshal([]byte("["+strings.Join(objs, ",")+"]"), &raw); err != nil {
		b.Fatal(err)
	}
	fresh := func() (*table.MetadataBuilder, table.Updates) {
		var u table.Updates // decoded afresh: the builder writes ids into the updates
		if err := json.Unmarshal([]byte("["+strings.Join(objs, ",")+"]"), &u); err != nil {
			b.Fatal(err)
		}
		bld, err := builderForCreate(u)
		if err != nil {
			b.Fatal(err)
		}
		return bld, u
	}
	b.Run("reference-layer", func(b *testing.B) {
		for b.Loop() {
			bld, u := fresh()
			if err := applyUpdates(bld, u, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("iceberg-go", func(b *testing.B) {
		for b.Loop() {
			bld, u := fresh()
			for _, x := range u {
				if err := x.Apply(bld); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzCreateUpdateOrder applies a create's updates in the orders (and
// subsets) the fuzzer picks: whatever the order, a create either builds
// metadata whose current schema, default spec and default sort order exist,
// or is refused as Invalid; it never panics or fails otherwise.
func FuzzCreateUpdateOrder(f *testing.F) {
	pool := []string{uAssignUUID, uFormat2, uAddSchema0, uAddSchema1, uCurSchemaL, uCurSchema0, uSpecNone, uSpecName,
		uSpecMissing, uDefSpecL, uDefSpec0, uOrderNone, uOrderID, uDefOrderL, uDefOrder0, uLocation, uPropsEmpty}
	f.Add([]byte{0, 1, 2, 6, 10, 11, 14, 15, 16, 5}) // DuckDB's order
	f.Add([]byte{0, 1, 2, 4, 7, 9, 12, 13, 15})      // PyIceberg's order, partitioned and sorted
	f.Add([]byte{6, 9, 11, 13, 2, 3, 4, 15})         // layout first, two schemas
	f.Add([]byte{7, 9, 2, 4, 11, 13, 15})            // partition field before any schema
	f.Fuzz(func(t *testing.T, picks []byte) {
		if len(picks) > 24 {
			return
		}
		objs := make([]string, 0, len(picks))
		for _, p := range picks {
			objs = append(objs, pool[int(p)%len(pool)])
		}
		md, err := applyAll(nil, orderUpdates(t, objs...))
		if err != nil {
			if k := floe.KindOf(err); k != floe.Invalid {
				t.Fatalf("error of kind %v: %v", k, err)
			}
			return
		}
		if md.CurrentSchema() == nil {
			t.Fatalf("accepted without a current schema")
		}
		specOK, orderOK := false, false
		for _, s := range md.PartitionSpecs() {
			specOK = specOK || s.ID() == md.DefaultPartitionSpec()
		}
		for _, o := range md.SortOrders() {
			orderOK = orderOK || o.OrderID() == md.DefaultSortOrder()
		}
		if !specOK || !orderOK {
			t.Fatalf("default spec %d or sort order %d missing", md.DefaultPartitionSpec(), md.DefaultSortOrder())
		}
	})
}
