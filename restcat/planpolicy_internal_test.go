package restcat

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake/rowproof"
)

// TestPlanPolicyDeleteFiles: the delete files of a data file the policy
// admits go with it when they name that file alone or are themselves
// proven (same partition); a delete file that may hold rows of other
// partitions (an equality delete without partition, a position delete file
// of no proven partition, a deletion vector of another file) refuses the
// plan rather than being handed out or left out.
func TestPlanPolicyDeleteFiles(t *testing.T) {
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	md, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, "s3://floe/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec = md.PartitionSpec()
	unparted := iceberg.NewPartitionSpecID(7) // not a spec of the table: no partition to prove anything
	file := func(sp iceberg.PartitionSpec, content iceberg.ManifestEntryContent, name, region string, edit func(*iceberg.DataFileBuilder)) iceberg.DataFile {
		var part map[int]any
		if sp.NumFields() > 0 {
			part = map[int]any{1000: region}
		}
		b, err := iceberg.NewDataFileBuilder(sp, content, "s3://floe/t/data/"+name, iceberg.ParquetFile, part, nil, nil, 3, 100)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(b)
		}
		return b.Build()
	}
	eu := file(spec, iceberg.EntryContentData, "eu.parquet", "EU", nil)
	us := file(spec, iceberg.EntryContentData, "us.parquet", "US", nil)
	euPos := file(spec, iceberg.EntryContentPosDeletes, "eu-pos.parquet", "EU", nil)
	euEq := file(spec, iceberg.EntryContentEqDeletes, "eu-eq.parquet", "EU", func(b *iceberg.DataFileBuilder) { b.EqualityFieldIDs([]int{1}) })
	globalEq := file(unparted, iceberg.EntryContentEqDeletes, "eq.parquet", "", func(b *iceberg.DataFileBuilder) { b.EqualityFieldIDs([]int{1}) })
	globalPos := file(unparted, iceberg.EntryContentPosDeletes, "pos.parquet", "", nil)
	dvEU := file(unparted, iceberg.EntryContentPosDeletes, "dv.puffin", "", func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(eu.FilePath()) })
	dvUS := file(unparted, iceberg.EntryContentPosDeletes, "dv-us.puffin", "", func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(us.FilePath()) })

	f, err := rowproof.Compile([]string{"region = 'EU'"}, func(ref string) (rowproof.Column, bool) {
		fd, ok := sc.FindFieldByNameCaseInsensitive(ref)
		return rowproof.Column{ID: fd.ID, Type: fd.Type}, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	pol := &planPolicy{filter: f, canon: f.String(), refuse: func(string) error { return refused }}
	for _, c := range []struct {
		name     string
		tasks    []table.FileScanTask
		files    []string // policyFiles of the kept tasks; nil: refused
		withheld int
	}{
		{"partitioned deletes go with their file", []table.FileScanTask{
			{File: eu, DeleteFiles: []iceberg.DataFile{euPos}, EqualityDeleteFiles: []iceberg.DataFile{euEq}},
			{File: us, DeleteFiles: []iceberg.DataFile{globalPos}, EqualityDeleteFiles: []iceberg.DataFile{globalEq}}},
			[]string{euEq.FilePath(), euPos.FilePath(), eu.FilePath()}, 1},
		{"a deletion vector of the file", []table.FileScanTask{{File: eu, DeletionVectorFiles: []iceberg.DataFile{dvEU}}},
			[]string{dvEU.FilePath(), eu.FilePath()}, 0},
		{"a deletion vector of another file", []table.FileScanTask{{File: eu, DeletionVectorFiles: []iceberg.DataFile{dvUS}}}, nil, 0},
		{"an equality delete of every partition", []table.FileScanTask{{File: eu, EqualityDeleteFiles: []iceberg.DataFile{globalEq}}}, nil, 0},
		{"a position delete of no proven partition", []table.FileScanTask{{File: eu, DeleteFiles: []iceberg.DataFile{globalPos}}}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, withheld, err := pol.apply(md, c.tasks)
			if c.files == nil {
				if !errors.Is(err, refused) {
					t.Fatalf("apply = %d tasks, %v; want refused", len(kept), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.files)
			slices.Sort(want)
			if got := policyFiles(kept); !slices.Equal(got, want) || withheld != c.withheld {
				t.Fatalf("files %v, withheld %d; want %v, %d", got, withheld, want, c.withheld)
			}
		})
	}
}
