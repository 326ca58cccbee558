package catalog

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// referenceMetadata is a table with one snapshot on main (id 7), a tag
// "t1" on it, schema 0 with fields 1-2, spec 0 and sort order 0.
func referenceMetadata(t *testing.T) table.Metadata {
	t.Helper()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	md, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://floe/ns/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := table.MetadataBuilderFromBase(md, "")
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(1)
	snap := table.Snapshot{SnapshotID: 7, SequenceNumber: seq, TimestampMs: md.LastUpdatedMillis() + 1,
		ManifestList: "s3://floe/ns/t/metadata/snap-7.avro", Summary: &table.Summary{Operation: table.OpAppend}}
	if err := b.AddSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef("main", 7, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef("t1", 7, table.TagRef); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRequirementReferenceWording checks that every failed table requirement
// is a Conflict worded as Apache Iceberg's UpdateRequirement words it (the
// RCK matches on these messages), and that passing requirements pass.
func TestRequirementReferenceWording(t *testing.T) {
	md := referenceMetadata(t)
	other := uuid.MustParse("6f9619ff-8b86-d011-b42d-00c04fc964ff")
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		req  table.Requirement
		want string // "" = passes
	}{
		{"uuid ok", table.AssertTableUUID(md.TableUUID()), ""},
		{"uuid", table.AssertTableUUID(other), "Requirement failed: UUID does not match: expected " + md.TableUUID().String() + " != " + other.String()},
		{"ref ok", table.AssertRefSnapshotID("main", i64(7)), ""},
		{"branch changed", table.AssertRefSnapshotID("main", i64(8)), "Requirement failed: branch main has changed: expected id 8 != 7"},
		{"tag changed", table.AssertRefSnapshotID("t1", i64(8)), "Requirement failed: tag t1 has changed: expected id 8 != 7"},
		{"branch created", table.AssertRefSnapshotID("main", nil), "Requirement failed: branch main was created concurrently"},
		{"ref missing", table.AssertRefSnapshotID("dev", i64(3)), "Requirement failed: branch or tag dev is missing, expected 3"},
		{"missing ref ok", table.AssertRefSnapshotID("dev", nil), ""},
		{"field id ok", table.AssertLastAssignedFieldID(2), ""},
		{"field id", table.AssertLastAssignedFieldID(5), "Requirement failed: last assigned field id changed: expected id 5 != 2"},
		{"schema ok", table.AssertCurrentSchemaID(0), ""},
		{"schema", table.AssertCurrentSchemaID(3), "Requirement failed: current schema changed: expected id 3 != 0"},
		{"partition id ok", table.AssertLastAssignedPartitionID(*md.LastPartitionSpecID()), ""},
		{"partition id", table.AssertLastAssignedPartitionID(1001), "Requirement failed: last assigned partition id changed: expected id 1001 != 999"},
		{"spec ok", table.AssertDefaultSpecID(0), ""},
		{"spec", table.AssertDefaultSpecID(4), "Requirement failed: default partition spec changed: expected id 4 != 0"},
		{"sort order ok", table.AssertDefaultSortOrderID(0), ""},
		{"sort order", table.AssertDefaultSortOrderID(2), "Requirement failed: default sort order changed: expected id 2 != 0"},
		{"create", table.AssertCreate(), "Requirement failed: table already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRequirement(tt.req, md)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want pass, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want %q, got pass", tt.want)
			}
			if floe.KindOf(err) != floe.Conflict {
				t.Errorf("kind %v, want Conflict", floe.KindOf(err))
			}
			if got := floe.PublicMessage(err); got != tt.want {
				t.Errorf("message\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
