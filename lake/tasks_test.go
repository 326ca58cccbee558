package lake_test

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
)

func dataFile(t *testing.T, path string, size int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 10, size)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

func TestWholeFiles(t *testing.T) {
	a, b := dataFile(t, "s3://w/a.parquet", 300), dataFile(t, "s3://w/b.parquet", 50)
	split := func(f iceberg.DataFile, start, length int64) table.FileScanTask {
		return table.FileScanTask{File: f, Start: start, Length: length}
	}
	tests := []struct {
		name  string
		tasks []table.FileScanTask
		want  string
	}{
		{"none", nil, "[]"},
		{"whole files stay", []table.FileScanTask{split(a, 0, 300), split(b, 0, 50)}, "[s3://w/a.parquet 0+300 s3://w/b.parquet 0+50]"},
		{"splits merge in first-seen order", []table.FileScanTask{split(a, 0, 100), split(b, 0, 50), split(a, 100, 100), split(a, 200, 100)},
			"[s3://w/a.parquet 0+300 s3://w/b.parquet 0+50]"},
		{"a later split first", []table.FileScanTask{split(a, 200, 100), split(a, 0, 200)}, "[s3://w/a.parquet 0+300]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, task := range lake.WholeFiles(tt.tasks) {
				got = append(got, fmt.Sprintf("%s %d+%d", task.File.FilePath(), task.Start, task.Length))
			}
			if s := fmt.Sprint(got); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}
