package restcat_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit/localcat"
	"github.com/floe-lake/floe/restcat"
)

// BenchmarkAsyncPlanRSS plans, asynchronously, a table of
// FLOE_BENCH_PLAN_MANIFESTS manifests of FLOE_BENCH_PLAN_FILES_PER_MANIFEST
// data files each (default 100 x 10,000: one million files; metadata
// only) through the REST handler, polls it to completion, and reports the
// process's resident set growth over the plan (peak VmRSS, sampled every
// 5 ms, less VmRSS before it, after the table was built and memory
// returned to the OS), the plan's duration and its deflated size in the
// plan cache.
func BenchmarkAsyncPlanRSS(b *testing.B) {
	manifests, files := envInt("FLOE_BENCH_PLAN_MANIFESTS", 100), envInt("FLOE_BENCH_PLAN_FILES_PER_MANIFEST", 10_000)
	lc := localcat.New(b)
	_, fsys := lc.RegionTable(b, "t", manifests, files)
	h := restcat.New(lc.Catalog, restcat.Options{DefaultWarehouse: localcat.Warehouse, Planning: &restcat.Planning{FS: fsys,
		CacheBytes: 1 << 30}})
	b.Cleanup(h.Close)
	path := "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t/plan"
	do := func(method, p, body string) []byte {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, p, strings.NewReader(body)))
		if w.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %.300s", method, p, w.Code, w.Body.String())
		}
		return w.Body.Bytes()
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		debug.FreeOSMemory()
		base := rss(b)
		var peak atomic.Int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				if r := rss(b); r > peak.Load() {
					peak.Store(r)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		b.StartTimer()
		start := time.Now()
		// A new filter literal each time: a new plan, not the cached one.
		var sub struct {
			Status string `json:"status"`
			PlanID string `json:"plan-id"`
		}
		_ = json.Unmarshal(do("POST", path, `{"filter":{"type":"not-eq","term":"region","value":"x`+strconv.Itoa(i)+`"}}`), &sub)
		if sub.Status != "submitted" {
			b.Fatalf("status %q", sub.Status)
		}
		var pages int
		for {
			var res struct {
				Status    string   `json:"status"`
				PlanTasks []string `json:"plan-tasks"`
			}
			_ = json.Unmarshal(do("GET", path+"/"+sub.PlanID, ""), &res)
			if res.Status == "completed" {
				pages = len(res.PlanTasks) + 1
				break
			}
			if res.Status != "submitted" {
				b.Fatalf("status %q", res.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		close(stop)
		<-sampled
		b.ReportMetric(float64(peak.Load()-base)/(1<<20), "rss-growth-MiB")
		b.ReportMetric(elapsed.Seconds(), "plan-s")
		b.ReportMetric(float64(pages), "pages")
		_, size := restcat.PlanCacheSize(h)
		b.ReportMetric(float64(size)/(1<<20), "cached-MiB")
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", path+"/"+sub.PlanID, nil))
		b.StartTimer()
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// rss returns the process's resident set size in bytes.
func rss(tb testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkPlanManifestCache plans, with a new filter each time (every
// file passes), a table of 10,000 data files in 100 manifests, with the
// manifest cache (default) and without it, in one run, and iceberg-go
// planning the same scan on the client; each reports its median (p50-ms).
func BenchmarkPlanManifestCache(b *testing.B) {
	lc := localcat.New(b)
	_, fsys := lc.RegionTable(b, "t", 100, 100)
	path := "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t/plan"
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"manifest-cache", 0}, {"no-manifest-cache", -1}} {
		b.Run(c.name, func(b *testing.B) {
			h := restcat.New(lc.Catalog, restcat.Options{DefaultWarehouse: localcat.Warehouse,
				Planning: &restcat.Planning{FS: fsys, ManifestCacheBytes: c.bytes}})
			plan := func(i int) {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path,
					strings.NewReader(`{"filter":{"type":"not-eq","term":"region","value":"x`+strconv.Itoa(i)+`"}}`)))
				if w.Code != http.StatusOK {
					b.Fatalf("plan: %d %.300s", w.Code, w.Body.String())
				}
			}
			plan(-1) // warms the cache
			var durs []time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				plan(i)
				durs = append(durs, time.Since(start))
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
