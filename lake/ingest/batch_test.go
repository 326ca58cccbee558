package ingest_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/floe-lake/floe/lake/ingest"
)

// TestSmallInputSmallBatch: reading a one-row CSV or NDJSON body allocates
// in proportion to the row, not to the default batch of 64Ki rows (whose
// room the readers reserve per column before reading: megabytes for each
// one-row ingest, the soak's second-largest allocation), and a large input
// still reads in batches of the set size.
func TestSmallInputSmallBatch(t *testing.T) {
	for _, tc := range []struct {
		format ingest.Format
		body   string
	}{
		{ingest.CSV, "id,name,amount\n7,x,1.5\n"},
		{ingest.NDJSON, `{"id":7,"name":"x","amount":1.5}` + "\n"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			read := func() int64 {
				src, err := ingest.Open(t.Context(), strings.NewReader(tc.body), ingest.ReadOptions{Format: tc.format})
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				var rows int64
				for src.Next() {
					rows += src.RecordBatch().NumRows()
				}
				if err := src.Err(); err != nil {
					t.Fatal(err)
				}
				return rows
			}
			const rounds = 20
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range rounds {
				if n := read(); n != 1 {
					t.Fatalf("read %d rows, want 1", n)
				}
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > 512<<10 {
				t.Fatalf("reading a one-row %s body allocates %d KiB", tc.format, per>>10)
			}
		})
	}
	t.Run("large input keeps its batches", func(t *testing.T) {
		var b bytes.Buffer
		b.WriteString("id,name\n")
		for i := range 10_000 {
			fmt.Fprintf(&b, "%d,n%d\n", i, i)
		}
		src, err := ingest.Open(t.Context(), &b, ingest.ReadOptions{Format: ingest.CSV, BatchSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		var sizes []int64
		for src.Next() {
			sizes = append(sizes, src.RecordBatch().NumRows())
		}
		if err := src.Err(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sizes) != "[4096 4096 1808]" {
			t.Fatalf("batches %v, want [4096 4096 1808]", sizes)
		}
	})
}
