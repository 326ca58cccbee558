package ingest_test

import (
	"bytes"
	"testing"

	"github.com/floe-lake/floe/lake/ingest"
)

// FuzzOpen: any bytes, read as CSV or NDJSON (sampling, inference and the
// Arrow readers), yield batches or an error, never a panic; Parquet and
// Arrow inputs are fuzzed by arrow-go itself.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{peopleCSV, "a,b\n1,2\n3", "\ufeffx\n\"q\n", `{"a":1,"b":{"c":[1,2.5]}}` + "\n" + `{"a":"x"}`,
		`{"t":"2026-01-01T00:00:00Z","d":"2026-01-01"}`, "[1]", "{", `{"a":1,"a":2}`,
		`{"a":1}` + "\n" + `{"a":2,}`, "a,b\n1,2,3\n", "a\n\"x\"y\n"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		format := ingest.CSV
		if json {
			format = ingest.NDJSON
		}
		src, err := ingest.Open(t.Context(), bytes.NewReader(data), ingest.ReadOptions{Format: format, BatchSize: 7})
		if err != nil {
			return
		}
		defer src.Close()
		for src.Next() {
			if src.RecordBatch().NumCols() != int64(src.Schema().NumFields()) {
				t.Fatal("a batch does not match the schema")
			}
		}
		_ = src.Err()
		if _, err := ingest.InferSchema(src.Schema()); err != nil {
			t.Logf("schema not mappable: %v", err)
		}
	})
}
