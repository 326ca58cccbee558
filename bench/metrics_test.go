package bench

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkLoadTableMetrics is BenchmarkLoadTable against two nodes in one
// process, one with the admin listener off (no registry: the no-op
// recorders, which is what the build before metrics did) and one with it
// on (every request counted and timed by route; commits, credentials,
// cache lookups and store latency recorded). b.N loads are split into 20
// rounds that alternate between the two (order swapped every round), so
// that both see the same machine: on a shared machine whose speed drifts
// by 2x within a minute, only an interleaved comparison means anything.
// It reports each node's loads/s, on/off (the throughput ratio over all
// rounds) and the median of the rounds' ratios, which a burst of load from
// elsewhere on the machine moves less; and the process's CPU time per
// load during each node's rounds (the client's share included, the same
// for both), which measures the cost rather than the machine's mood.
//
//	go test ./bench -run '^$' -bench LoadTableMetrics -benchtime 40000x
func BenchmarkLoadTableMetrics(b *testing.B) {
	type node struct {
		f   *testkit.Floe
		tok string
		c   *http.Client
		dur time.Duration
		cpu time.Duration // process CPU time (user+system) during its rounds
		n   int
	}
	start := func(admin string) *node {
		f := testkit.Start(b, storeOption(b), func(cfg *app.Config) { cfg.AdminListen = admin })
		if (f.App.Metrics() != nil) != (admin != "off") {
			b.Fatalf("metrics collected: %v with admin_listen %s", f.App.Metrics() != nil, admin)
		}
		n := &node{f: f, tok: f.Token(b), c: client(64)}
		createTables(b, f, n.c, n.tok, "load", 8)
		return n
	}
	off, on := start("off"), start("127.0.0.1:0")
	const rounds, workers = 20, 32
	per := max(1, b.N/(2*rounds))
	round := func(n *node) {
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		t0, c0 := time.Now(), selfCPU(b)
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= per {
						return
					}
					st, err := do(n.c, n.tok, "GET", fmt.Sprintf("%s%s", n.f.URL, n.f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
					if err == nil && st != 200 {
						err = fmt.Errorf("status %d", st)
					}
					if err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		n.dur += time.Since(t0)
		n.cpu += selfCPU(b) - c0
		n.n += per
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
	round(off) // warm both up
	round(on)
	off.dur, off.cpu, off.n, on.dur, on.cpu, on.n = 0, 0, 0, 0, 0, 0
	b.ResetTimer()
	ratios := make([]float64, 0, rounds)
	for r := range rounds {
		d0, d1 := off.dur, on.dur
		if r%2 == 0 {
			round(off)
			round(on)
		} else {
			round(on)
			round(off)
		}
		// Throughput on/off of this round's pair: the off node's time over the on node's.
		ratios = append(ratios, (off.dur-d0).Seconds()/(on.dur-d1).Seconds())
	}
	b.StopTimer()
	slices.Sort(ratios)
	offRate, onRate := float64(off.n)/off.dur.Seconds(), float64(on.n)/on.dur.Seconds()
	b.ReportMetric(offRate, "off_loads/s")
	b.ReportMetric(onRate, "on_loads/s")
	b.ReportMetric(onRate/offRate, "on/off")
	b.ReportMetric((ratios[rounds/2-1]+ratios[rounds/2])/2, "median_round_on/off")
	offCPU, onCPU := float64(off.cpu.Microseconds())/float64(off.n), float64(on.cpu.Microseconds())/float64(on.n)
	b.ReportMetric(offCPU, "off_cpu_us/load")
	b.ReportMetric(onCPU, "on_cpu_us/load")
	b.ReportMetric(onCPU/offCPU, "cpu_on/off")
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
