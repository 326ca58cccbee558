package restcat

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// The wire form of planned files (the spec's ContentFile, DataFile,
// PositionDeleteFile, EqualityDeleteFile and FileScanTask schemas).

type wireFile struct {
	Content         string  `json:"content"`
	FilePath        string  `json:"file-path"`
	FileFormat      string  `json:"file-format"`
	SpecID          int32   `json:"spec-id"`
	Partition       []any   `json:"partition"`
	FileSizeInBytes int64   `json:"file-size-in-bytes"`
	RecordCount     int64   `json:"record-count"`
	KeyMetadata     string  `json:"key-metadata,omitempty"`
	SplitOffsets    []int64 `json:"split-offsets,omitempty"`
	SortOrderID     *int    `json:"sort-order-id,omitempty"`

	// Data files.
	FirstRowID      *int64    `json:"first-row-id,omitempty"`
	ColumnSizes     *countMap `json:"column-sizes,omitempty"`
	ValueCounts     *countMap `json:"value-counts,omitempty"`
	NullValueCounts *countMap `json:"null-value-counts,omitempty"`
	NaNValueCounts  *countMap `json:"nan-value-counts,omitempty"`
	LowerBounds     *valueMap `json:"lower-bounds,omitempty"`
	UpperBounds     *valueMap `json:"upper-bounds,omitempty"`

	// Delete files.
	EqualityIDs        []int   `json:"equality-ids,omitempty"`
	ReferencedDataFile *string `json:"referenced-data-file,omitempty"`
	ContentOffset      *int64  `json:"content-offset,omitempty"`
	ContentSizeInBytes *int64  `json:"content-size-in-bytes,omitempty"`
}

// countMap is the spec's CountMap: field ids and counts as parallel arrays.
type countMap struct {
	Keys   []int   `json:"keys"`
	Values []int64 `json:"values"`
}

// valueMap is the spec's ValueMap for column bounds: field ids and the
// bounds' single-value binary serialization, hex-encoded (the spec's
// BinaryTypeValue, as Java's ContentFileParser writes them).
type valueMap struct {
	Keys   []int    `json:"keys"`
	Values []string `json:"values"`
}

type wireTask struct {
	DataFile       *wireFile       `json:"data-file"`
	DeleteFileRefs []int           `json:"delete-file-references,omitempty"`
	ResidualFilter json.RawMessage `json:"residual-filter,omitempty"`
}

// wirePage is one page of planned tasks: a ScanTasks object without its
// plan-tasks, whose delete-file references index its own delete-files.
type wirePage struct {
	DeleteFiles []*wireFile `json:"delete-files,omitempty"`
	Tasks       []wireTask  `json:"file-scan-tasks"`
}

// encoder turns iceberg-go files into their wire form for one table
// version.
type encoder struct {
	md    table.Metadata
	stats map[int]bool // field ids whose statistics are sent (stats-fields)
	// specs and partTypes cache each partition spec (Metadata clones it
	// at every lookup) and the result types of its fields.
	specs     map[int32]*iceberg.PartitionSpec
	partTypes map[int32][]iceberg.Type
	// filter is the scan's row filter: the residual of a task that
	// iceberg-go leaves without one.
	filter iceberg.BooleanExpression
}

func (e *encoder) page(tasks []table.FileScanTask) (wirePage, error) {
	p := wirePage{Tasks: make([]wireTask, 0, len(tasks))}
	idx := map[string]int{}
	for _, t := range tasks {
		df, err := e.file(t.File, true)
		if err != nil {
			return p, err
		}
		wt := wireTask{DataFile: df}
		for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range list {
				i, ok := idx[d.FilePath()+"\x00"+fmt.Sprint(d.ContentOffset())]
				if !ok {
					wd, err := e.file(d, false)
					if err != nil {
						return p, err
					}
					i = len(p.DeleteFiles)
					idx[d.FilePath()+"\x00"+fmt.Sprint(d.ContentOffset())] = i
					p.DeleteFiles = append(p.DeleteFiles, wd)
				}
				wt.DeleteFileRefs = append(wt.DeleteFileRefs, i)
			}
		}
		// Every task carries its residual-filter: the task's residual, else
		// the scan's filter, else true. The spec lets a server leave it out
		// (the client then applies the scan's filter), but Iceberg Java
		// 1.11 reads a missing one as null: a partitioned table's task
		// throws, an unpartitioned one is read unfiltered.
		res := t.Residual
		if res == nil {
			res = e.filter
		}
		if res == nil {
			res = iceberg.AlwaysTrue{}
		}
		if b, err := json.Marshal(res); err == nil {
			wt.ResidualFilter = b
		}
		p.Tasks = append(p.Tasks, wt)
	}
	return p, nil
}

func (e *encoder) file(f iceberg.DataFile, data bool) (*wireFile, error) {
	w := &wireFile{FilePath: f.FilePath(), FileFormat: formatName(f.FileFormat()), SpecID: f.SpecID(),
		FileSizeInBytes: f.FileSizeBytes(), RecordCount: f.Count(), SplitOffsets: f.SplitOffsets(), SortOrderID: f.SortOrderID()}
	switch f.ContentType() {
	case iceberg.EntryContentData:
		w.Content = "data"
	case iceberg.EntryContentPosDeletes:
		w.Content = "position-deletes"
	case iceberg.EntryContentEqDeletes:
		w.Content = "equality-deletes"
		w.EqualityIDs = f.EqualityFieldIDs()
	default:
		return nil, fmt.Errorf("file %s: unknown content %v", f.FilePath(), f.ContentType())
	}
	if k := f.KeyMetadata(); len(k) > 0 {
		w.KeyMetadata = hex.EncodeToString(k)
	}
	part, err := e.partition(f)
	if err != nil {
		return nil, err
	}
	w.Partition = part
	if data {
		w.FirstRowID = f.FirstRowID()
		if len(e.stats) > 0 {
			w.ColumnSizes = e.counts(f.ColumnSizes())
			w.ValueCounts = e.counts(f.ValueCounts())
			w.NullValueCounts = e.counts(f.NullValueCounts())
			w.NaNValueCounts = e.counts(f.NaNValueCounts())
			w.LowerBounds = e.bounds(f.LowerBoundValues())
			w.UpperBounds = e.bounds(f.UpperBoundValues())
		}
	} else {
		w.ReferencedDataFile, w.ContentOffset, w.ContentSizeInBytes = f.ReferencedDataFile(), f.ContentOffset(), f.ContentSizeInBytes()
	}
	return w, nil
}

func formatName(f iceberg.FileFormat) string {
	switch f {
	case iceberg.ParquetFile:
		return "parquet"
	case iceberg.AvroFile:
		return "avro"
	case iceberg.OrcFile:
		return "orc"
	default:
		return "puffin"
	}
}

func (e *encoder) counts(m map[int]int64) *countMap {
	c := &countMap{Keys: []int{}, Values: []int64{}}
	for _, id := range sortedKeys(m) {
		if e.stats[id] {
			c.Keys, c.Values = append(c.Keys, id), append(c.Values, m[id])
		}
	}
	if len(c.Keys) == 0 {
		return nil
	}
	return c
}

func (e *encoder) bounds(m map[int][]byte) *valueMap {
	v := &valueMap{Keys: []int{}, Values: []string{}}
	for _, id := range sortedKeys(m) {
		if e.stats[id] {
			v.Keys, v.Values = append(v.Keys, id), append(v.Values, hex.EncodeToString(m[id]))
		}
	}
	if len(v.Keys) == 0 {
		return nil
	}
	return v
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// partition returns f's partition values in the order of its spec's
// fields, each in the JSON form of the field's result type.
func (e *encoder) partition(f iceberg.DataFile) ([]any, error) {
	spec, ok := e.specs[f.SpecID()]
	if !ok {
		if spec = e.md.PartitionSpecByID(int(f.SpecID())); spec == nil {
			return nil, fmt.Errorf("file %s: partition spec %d not in the table", f.FilePath(), f.SpecID())
		}
		e.specs[f.SpecID()] = spec
	}
	types, ok := e.partTypes[f.SpecID()]
	if !ok {
		for _, pf := range spec.Fields() {
			var typ iceberg.Type
			for _, sc := range e.md.Schemas() {
				if src, ok := sc.FindTypeByID(pf.SourceID()); ok {
					typ = pf.Transform.ResultType(src)
					break
				}
			}
			types = append(types, typ)
		}
		e.partTypes[f.SpecID()] = types
	}
	vals := f.Partition()
	out := make([]any, 0, spec.NumFields())
	i := 0
	for _, pf := range spec.Fields() {
		out = append(out, partitionValue(vals[pf.FieldID], types[i]))
		i++
	}
	return out, nil
}

// partitionValue is the spec's PrimitiveTypeValue of v, of type typ:
// numbers and booleans as JSON, dates, times and timestamps as ISO-8601
// strings, decimals as strings, binary and fixed as hex, null as null.
func partitionValue(v any, typ iceberg.Type) any {
	switch x := v.(type) {
	case nil:
		return nil
	case iceberg.Date:
		return x.ToTime().UTC().Format("2006-01-02")
	case iceberg.Time:
		return time.UnixMicro(int64(x)).UTC().Format("15:04:05.999999")
	case iceberg.Timestamp:
		t := x.ToTime().UTC()
		switch typ.(type) {
		case iceberg.TimestampTzType:
			return t.Format("2006-01-02T15:04:05.999999") + "+00:00"
		case iceberg.DateType:
			return t.Format("2006-01-02")
		}
		return t.Format("2006-01-02T15:04:05.999999")
	case iceberg.TimestampNano:
		t := time.Unix(0, int64(x)).UTC()
		if _, tz := typ.(iceberg.TimestampTzNsType); tz {
			return t.Format("2006-01-02T15:04:05.999999999") + "+00:00"
		}
		return t.Format("2006-01-02T15:04:05.999999999")
	case iceberg.Decimal:
		return x.String()
	case uuid.UUID:
		return x.String()
	case []byte:
		return hex.EncodeToString(x)
	default:
		return v
	}
}
