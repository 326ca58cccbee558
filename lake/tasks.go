package lake

import "github.com/apache/iceberg-go/table"

// WholeFiles merges the byte-range tasks iceberg-go's PlanFiles splits a
// large Parquet data file into (one per group of row groups, by the file's
// split offsets and read.split.target-size) back into one task per data
// file, in first-seen order. Readers that open whole files (DuckDB's
// read_parquet, compaction's rewrite) must use it: taking each split task
// as a file would read the file once per split.
func WholeFiles(tasks []table.FileScanTask) []table.FileScanTask {
	seen := make(map[string]bool, len(tasks))
	out := make([]table.FileScanTask, 0, len(tasks))
	for _, t := range tasks {
		loc := t.File.FilePath()
		if seen[loc] {
			continue
		}
		seen[loc] = true
		t.Start, t.Length = 0, t.File.FileSizeBytes()
		out = append(out, t)
	}
	return out
}
