package deltasharing

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FileFilter decides a share's partition filter on the files of one table
// version exactly as the Delta Sharing server enforces it when it lists
// files: the share catalog uses it to derive the snapshot it serves, so the
// two protocols never disagree on what a filter allows.
type FileFilter struct {
	e     *expr
	cols  *columns
	plans map[int][]planField
}

// NewFileFilter compiles filter (ParseFilter's grammar) for the partition
// specs and current schema of md.
func NewFileFilter(filter string, md table.Metadata) (*FileFilter, error) {
	e, err := parseSQL(filter)
	if err != nil {
		return nil, fmt.Errorf("deltasharing: partition filter: %w", err)
	}
	specs := map[int]*iceberg.PartitionSpec{}
	for _, s := range md.PartitionSpecs() {
		specs[s.ID()] = &s
	}
	cols, plans := partitionPlans(md.CurrentSchema(), specs, nil)
	return &FileFilter{e: e, cols: cols, plans: plans}, nil
}

// Decide returns 1 when every row of df (a data or delete file) passes the
// filter by its partition values, -1 when none does, and 0 when its
// partition values cannot tell (a spec without the filtered field).
func (f *FileFilter) Decide(df iceberg.DataFile) int {
	fe := fileEntry{cols: f.cols, parts: make([]pval, len(f.cols.parts))}
	for i := range fe.parts {
		fe.parts[i].kind = 'x'
	}
	part := df.Partition()
	for _, pf := range f.plans[int(df.SpecID())] {
		v, has := part[pf.fieldID]
		pv := pvalOf(pf.typ, v, has)
		fe.parts[pf.name] = pv
		if pf.source >= 0 {
			fe.parts[pf.source] = pv
		}
	}
	return int(eval(f.e, &fe, false))
}
