package app

import (
	"io/fs"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// files is a fake readFile over a map.
type files map[string]string

func (f files) read(p string) ([]byte, error) {
	if s, ok := f[p]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

const meminfo = "MemTotal:       16777216 kB\nMemFree:         1234 kB\n" // 16 GiB

func TestMemoryLimitBytes(t *testing.T) {
	tests := []struct {
		name, setting string
		files         files
		want          int64
		wantErr       bool
	}{
		{"share of the machine", "75%", files{"/proc/meminfo": meminfo}, 12 << 30, false},
		{"cgroup v2 limit lower", "50%", files{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "4294967296\n"}, 2 << 30, false},
		{"cgroup v2 max", "50%", files{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 8 << 30, false},
		{"cgroup v1 limit", "100%", files{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824"}, 1 << 30, false},
		{"cgroup v1 unlimited", "100%", files{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, 16 << 30, false},
		{"size", "1536MiB", nil, 1536 << 20, false},
		{"decimal size", "2GB", nil, 2e9, false},
		{"plain bytes", "104857600", nil, 100 << 20, false},
		{"off", "off", nil, math.MaxInt64, false},
		{"too small", "1MiB", nil, 0, true},
		{"zero share", "0%", files{"/proc/meminfo": meminfo}, 0, true},
		{"share over 100", "150%", files{"/proc/meminfo": meminfo}, 0, true},
		{"NaN share", "NaN%", files{"/proc/meminfo": meminfo}, 0, true},
		{"no meminfo", "75%", files{}, 0, true},
		{"garbage", "lots", nil, 0, true},
		{"unknown unit", "5 parsecs", nil, 0, true},
		{"overflow", "9999999999TiB", nil, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MemoryLimitBytes(tc.setting, tc.files.read)
			if (err != nil) != tc.wantErr {
				t.Fatalf("MemoryLimitBytes(%q) error %v, want error %v", tc.setting, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("MemoryLimitBytes(%q) = %d, want %d", tc.setting, got, tc.want)
			}
		})
	}
}

// FuzzParseBytes: ParseBytes never panics, never returns a negative size,
// and accepts exactly what has a known unit and fits in an int64.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"1", "512MiB", "2GB", " 3 kib ", "-1", "9223372036854775807", "1TiB", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
		if _, _, err := parseMemoryLimit(s); err == nil {
			if n, _ := MemoryLimitBytes(s, files{"/proc/meminfo": meminfo}.read); n <= 0 {
				t.Fatalf("MemoryLimitBytes(%q) = %d", s, n)
			}
		}
	})
}

// TestApplyMemory checks that the settings reach the runtime, that GOGC and
// GOMEMLIMIT from the environment win, and restores the runtime afterwards.
func TestApplyMemory(t *testing.T) {
	oldGC, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldGC); debug.SetMemoryLimit(oldLimit) })
	log := slog.New(slog.DiscardHandler)

	cfg := Defaults()
	cfg.MemoryLimit, cfg.GCPercent = "300MiB", 150
	s, err := ApplyMemory(cfg, func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 || s.Limit != 300<<20 || s.LimitFrom != "memory_limit" {
		t.Errorf("memory limit %d (reported %d from %s), want %d from memory_limit", got, s.Limit, s.LimitFrom, 300<<20)
	}
	if got := debug.SetGCPercent(150); got != 150 || s.GCFrom != "gc_percent" {
		t.Errorf("GC percent %d from %s, want 150 from gc_percent", got, s.GCFrom)
	}

	// The environment wins: the runtime read GOGC/GOMEMLIMIT at start (set
	// here by hand), and ApplyMemory leaves them as they are.
	debug.SetGCPercent(77)
	debug.SetMemoryLimit(200 << 20)
	env := map[string]string{"GOGC": "77", "GOMEMLIMIT": "200MiB"}
	s, err = ApplyMemory(cfg, func(k string) string { return env[k] }, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 200<<20 || s.LimitFrom != "GOMEMLIMIT" {
		t.Errorf("memory limit %d from %s, want GOMEMLIMIT's %d", got, s.LimitFrom, 200<<20)
	}
	if got := debug.SetGCPercent(77); got != 77 || s.GCPercent != 77 || s.GCFrom != "GOGC" {
		t.Errorf("GC percent %d (reported %d from %s), want GOGC's 77", got, s.GCPercent, s.GCFrom)
	}

	for _, bad := range []Config{{MemoryLimit: "lots", GCPercent: 100}, {MemoryLimit: "1GiB", GCPercent: -2}} {
		if _, err := ApplyMemory(bad, func(string) string { return "" }, log); err == nil {
			t.Errorf("ApplyMemory(%+v) accepted", bad)
		}
	}
	if _, err := ApplyMemory(Config{MemoryLimit: "1GiB", GCPercent: 100}, func(string) string { return "" }, log); err != nil {
		t.Errorf("valid config refused: %v", err)
	}

}

func TestGCTuneLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		ceiling        int64
		want           int64
	}{
		{0, 160 * mib, 1 << 40, 192 * mib},
		{64 * mib, 160 * mib, 1 << 40, (64 + 160 + 32 + 8) * mib},
		{400 * mib, 160 * mib, 1 << 40, (400 + 400 + 32 + 50) * mib},
		{400 * mib, 160 * mib, 600 * mib, 600 * mib}, // never above the configured limit
		{math.MaxUint64 / 2, 160 * mib, math.MaxInt64, math.MaxInt64},
	} {
		if got := GCTuneLimit(c.live, c.headroom, c.ceiling); got != c.want {
			t.Errorf("GCTuneLimit(%d MiB, %d MiB, %d) = %d MiB, want %d MiB", c.live/mib, c.headroom/mib, c.ceiling, got/mib, c.want/mib)
		}
	}
}

func TestGCTuneTarget(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 160 * mib, 400},
		{10 * mib, 160 * mib, 400},   // small heap: as rarely as GOGC=400
		{40 * mib, 160 * mib, 400},   // exactly four times
		{80 * mib, 160 * mib, 200},   // headroom over live
		{100 * mib, 160 * mib, 160},  //
		{160 * mib, 160 * mib, 100},  // live = headroom
		{2048 * mib, 160 * mib, 100}, // large heap: never below GOGC=100
	} {
		if got := GCTuneTarget(c.live, c.headroom); got != c.want {
			t.Errorf("GCTuneTarget(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.headroom/mib, got, c.want)
		}
	}
}

// TestGCTunerFollowsLiveHeap runs the tuner with a headroom of twice a
// live heap the test holds, and checks that after collections the GC
// percentage is what GCTuneTarget says for the live heap (about 200),
// then that a live heap past the headroom brings it to 100, and that Stop
// ends the tuning.
func TestGCTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	live := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	gogc := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	runtime.GC()
	base := live()
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	headroom := 2 * (base + uint64(len(hold)))
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(oldLimit) })
	const ceiling = 8 << 30
	stop := StartGCTuner(headroom, ceiling)
	defer stop()
	waitFor := func(want func(int) bool, what string) int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			time.Sleep(20 * time.Millisecond) // cleanups run after the cycle
			pct := gogc()
			if want(pct) {
				return pct
			}
			if time.Now().After(deadline) {
				t.Fatalf("GC percent %d after 10 s, want %s (live %d MiB)", pct, what, live()>>20)
			}
		}
	}
	waitFor(func(p int) bool { return p >= 170 && p <= 230 }, "about 200")
	limit := debug.SetMemoryLimit(-1)
	if want := GCTuneLimit(live(), headroom, ceiling); limit < want*8/10 || limit > want*12/10 {
		t.Errorf("soft memory limit %d MiB, want about %d MiB", limit>>20, want>>20)
	}
	more := make([]byte, 3*len(hold))
	for i := range more {
		more[i] = byte(i)
	}
	waitFor(func(p int) bool { return p == 100 }, "100 once live passes the headroom")
	runtime.KeepAlive(hold)
	runtime.KeepAlive(more)
	stop()
	debug.SetGCPercent(333)
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	if p := gogc(); p != 333 {
		t.Fatalf("the stopped tuner still sets the GC percent: %d", p)
	}
	if l := debug.SetMemoryLimit(-1); l != ceiling {
		t.Fatalf("stopping the tuner left the memory limit at %d MiB, want the ceiling %d MiB", l>>20, ceiling>>20)
	}
}
