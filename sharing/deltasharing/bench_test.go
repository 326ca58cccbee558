package deltasharing_test

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// benchFiles is the size of the benchmark's table (the target:
// query on 10,000 data files in at most 150 ms p50, URL signing included).
const benchFiles = 10_000

// tenThousandFiles creates crm.big with benchFiles data files (manifest
// entries with partition values and column bounds; the files themselves
// are not needed to list and sign them).
func tenThousandFiles(b *testing.B, e *env) {
	b.Helper()
	tbl := e.createOrders(b, "big", nil)
	spec := tbl.Spec()
	loc := strings.TrimSuffix(tbl.Location(), "/")
	files := make([]iceberg.DataFile, benchFiles)
	for i := range files {
		lo, hi := make([]byte, 8), make([]byte, 8)
		binary.LittleEndian.PutUint64(lo, uint64(i*100))
		binary.LittleEndian.PutUint64(hi, uint64(i*100+99))
		region := regions[i%3]
		fb, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/region=%s/%05d-0-bench.parquet", loc, region, i), iceberg.ParquetFile,
			map[int]any{1000: region}, nil, nil, 100, 4096+int64(i))
		if err != nil {
			b.Fatal(err)
		}
		files[i] = fb.LowerBoundValues(map[int][]byte{1: lo, 2: []byte(region)}).
			UpperBoundValues(map[int][]byte{1: hi, 2: []byte(region)}).NullValueCounts(map[int]int64{1: 0, 2: 0}).Build()
	}
	if _, err := lake.AppendFiles(b.Context(), tbl, files, nil); err != nil {
		b.Fatal(err)
	}
	e.share("retail", "big", "big", true, "")
}

// benchQuery runs the query b.N times and reports the median latency.
func benchQuery(b *testing.B, cache int) {
	e := newEnv(b)
	tenThousandFiles(b, e)
	h := deltasharing.New(deltasharing.Options{Resolver: e.res, Tables: e.f.App.Catalog(), FS: lake.NewBucketFS(e.f.App.Objects()),
		Minter: e.f.App.Minter(), Endpoint: e.f.App.S3URL, PathStyle: true, Region: "us-east-1", Cache: cache})
	run := func() *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, deltasharing.Prefix+"/shares/sales/schemas/retail/tables/big/query",
			strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tokenAlice)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := run() // warm up (fills the cache when there is one)
	if w.Code != 200 || strings.Count(w.Body.String(), `{"file":`) != benchFiles || strings.Count(w.Body.String(), "X-Amz-Signature=") != benchFiles {
		b.Fatalf("%d, %d files: %.300s", w.Code, strings.Count(w.Body.String(), `{"file":`), w.Body.String())
	}
	var ds []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if w := run(); w.Code != 200 {
			b.Fatal(w.Code)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkQuery10kFiles: a query of a 10,000-file table whose listing is
// cached (the same snapshot read again), URLs signed per request.
func BenchmarkQuery10kFiles(b *testing.B) { benchQuery(b, 0) }

// BenchmarkQuery10kFilesCold: the same without the listing cache: the
// manifests are read and decoded on every query.
func BenchmarkQuery10kFilesCold(b *testing.B) { benchQuery(b, -1) }
