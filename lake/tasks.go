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

// Resident-memory model of planned scan tasks: each data or delete file
// holds its path, its statistics (column sizes, value, null and NaN counts,
// lower and upper bounds: as decoded from the manifest and again as maps
// once read) and fixed fields. Measured by TestTasksBytesCoversResidentSize
// (about 4.4 KiB a file for a 3-column, partitioned table, with iceberg-go
// 0.7 and Go 1.26; 4 KiB + 256 B a column leaves about 12% of margin for
// what other goroutines allocate meanwhile); the estimate is an upper
// bound, generous per column because wide tables carry statistics for each.
const (
	taskFileBytes   = 4096
	taskColumnBytes = 256
)

// TasksBytes estimates the memory that tasks of a table with columns
// columns hold, to bound caches of scan plans.
func TasksBytes(tasks []table.FileScanTask, columns int) int64 {
	perFile := int64(taskFileBytes + taskColumnBytes*columns)
	var n int64
	for _, t := range tasks {
		files := 1 + len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		n += int64(files)*perFile + int64(len(t.File.FilePath()))
	}
	return n
}
