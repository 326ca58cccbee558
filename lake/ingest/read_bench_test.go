package ingest_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/floe-lake/floe/lake/ingest"
)

// benchRows is the size of the inputs of BenchmarkRead.
const benchRows = 100_000

func benchInput(format ingest.Format) []byte {
	var b bytes.Buffer
	if format == ingest.CSV {
		b.WriteString("id,name,amount,day,ts\n")
	}
	for i := range benchRows {
		day := fmt.Sprintf("2026-%02d-%02d", i%12+1, i%28+1)
		ts := day + fmt.Sprintf("T%02d:%02d:00Z", i%24, i%60)
		if format == ingest.CSV {
			fmt.Fprintf(&b, "%d,name %d,%d.%02d,%s,%s\n", i, i, i, i%100, day, ts)
		} else {
			fmt.Fprintf(&b, `{"id":%d,"name":"name %d","amount":%d.%02d,"day":"%s","ts":"%s"}`+"\n", i, i, i, i%100, day, ts)
		}
	}
	return b.Bytes()
}

// BenchmarkRead reads CSV and NDJSON inputs of benchRows rows through
// Open (sampling, type inference and the record reader), as an ingest
// does before converting and writing. It uses only what the build before
// issue 17 has, so that the same file measures both (docs/benchmarks.md).
func BenchmarkRead(b *testing.B) {
	for _, format := range []ingest.Format{ingest.CSV, ingest.NDJSON} {
		in := benchInput(format)
		b.Run(string(format), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				src, err := ingest.Open(b.Context(), bytes.NewReader(in), ingest.ReadOptions{Format: format})
				if err != nil {
					b.Fatal(err)
				}
				rows := int64(0)
				for src.Next() {
					rows += src.RecordBatch().NumRows()
				}
				if err := src.Err(); err != nil || rows != benchRows {
					b.Fatalf("%d rows, %v", rows, err)
				}
				src.Close()
			}
		})
	}
}
