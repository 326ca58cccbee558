package app

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
)

// Memory defaults. The garbage collector's percentage was chosen by
// measurement (docs/operations.md, "Memory"): a fixed 400 (what Floe used
// before) lets the heap grow to five times the live data, most of an 18 GiB
// RSS after 2,400 appends once the live data grew; a fixed 100 keeps it at
// twice but costs small servers 16% of loadTable throughput in collection.
// The default, auto, gives the heap DefaultGCHeadroom of room above the
// live data, at least as much as the live data itself (GOGC 100) and at most
// four times it (GOGC 400): small heaps collect as rarely as before, large
// ones grow by a bounded amount.
const (
	// DefaultGCPercent is the GOGC Floe runs with unless GOGC or gc_percent
	// says otherwise: GCAuto.
	DefaultGCPercent = GCAuto
	// GCAuto is the gc_percent that tunes the percentage after every
	// collection from the live heap (see GCTuneTarget).
	GCAuto = 0
	// DefaultGCHeadroom is the heap room above the live data that auto
	// aims for.
	DefaultGCHeadroom = 160 << 20
	// gcAutoMin and gcAutoMax bound the percentage auto sets.
	gcAutoMin = 100
	gcAutoMax = 400
	// DefaultMemoryLimit is the soft memory limit: this share of the
	// machine's memory, or of the cgroup's limit when that is lower.
	DefaultMemoryLimit = "75%"
	// DefaultMetadataCacheBytes bounds the estimated resident memory of
	// the parsed-metadata caches (catalog metadata and SQL scan plans).
	DefaultMetadataCacheBytes = 128 << 20
)

// MemorySettings is the outcome of ApplyMemory.
type MemorySettings struct {
	// Limit is the soft memory limit in bytes (math.MaxInt64: none).
	Limit int64
	// LimitFrom says where it came from: "GOMEMLIMIT", "memory_limit" or "off".
	LimitFrom string
	// GCPercent is the collector's percentage (GCAuto: tuned);
	// GCFrom says where it came from.
	GCPercent int
	GCFrom    string
	// Stop ends the tuning of GCAuto (a no-op otherwise).
	Stop func()
}

// ApplyMemory sets the Go runtime's soft memory limit and GC percentage for
// a serving process and logs them. GOMEMLIMIT and GOGC in the environment
// win over cfg (the runtime has applied them already); otherwise
// cfg.MemoryLimit and cfg.GCPercent are applied. It changes process-wide
// state, so only `floe serve` calls it, never a library or a test server.
func ApplyMemory(cfg Config, getenv func(string) string, log *slog.Logger) (MemorySettings, error) {
	s := MemorySettings{Stop: func() {}}
	if cfg.GCPercent < -1 {
		return s, fmt.Errorf("gc_percent %d: must be 0 (auto), positive, or -1 (collect only at the memory limit)", cfg.GCPercent)
	}
	if v := getenv("GOMEMLIMIT"); v != "" {
		s.Limit, s.LimitFrom = debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	} else {
		limit, err := MemoryLimitBytes(cfg.MemoryLimit, os.ReadFile)
		if err != nil {
			if _, _, perr := parseMemoryLimit(cfg.MemoryLimit); perr != nil {
				return s, perr
			}
			// A share of memory this system does not report: run without a limit.
			log.Warn("memory: cannot size memory_limit; running without a soft memory limit", "memory_limit", cfg.MemoryLimit, "err", err)
			limit = math.MaxInt64
		}
		s.Limit, s.LimitFrom = limit, "memory_limit"
		if limit == math.MaxInt64 {
			s.LimitFrom = "off"
		}
		debug.SetMemoryLimit(limit)
	}
	if v := getenv("GOGC"); v != "" {
		s.GCPercent, s.GCFrom = debug.SetGCPercent(-1), "GOGC"
		debug.SetGCPercent(s.GCPercent)
	} else {
		s.GCPercent, s.GCFrom = cfg.GCPercent, "gc_percent"
		if cfg.GCPercent == GCAuto {
			headroom := cfg.GCHeadroom
			if headroom <= 0 {
				headroom = DefaultGCHeadroom
			}
			ceiling := int64(-1) // GOMEMLIMIT from the environment: leave the limit alone
			if s.LimitFrom != "GOMEMLIMIT" {
				ceiling = s.Limit
			}
			s.Stop = StartGCTuner(uint64(headroom), ceiling)
		} else {
			debug.SetGCPercent(cfg.GCPercent)
		}
	}
	attrs := []any{"gc_percent", s.GCPercent, "gc_percent_from", s.GCFrom, "memory_limit_from", s.LimitFrom}
	if s.GCPercent == GCAuto && s.GCFrom == "gc_percent" {
		attrs[1] = "auto"
		attrs = append(attrs, "gc_headroom_mib", max(cfg.GCHeadroom, 0)>>20)
	}
	if s.Limit != math.MaxInt64 {
		attrs = append(attrs, "memory_limit_mib", s.Limit>>20)
	}
	log.Info("memory: runtime limits set", attrs...)
	return s, nil
}

// MemoryLimitBytes resolves a memory_limit setting to bytes: "off" (no
// limit: math.MaxInt64), a size ("1536MiB", "2GiB", "2GB", "800000000"),
// or a share of the memory available to the process ("75%": of the lower
// of MemTotal in /proc/meminfo and the cgroup v2 or v1 memory limit).
// readFile reads those files.
func MemoryLimitBytes(s string, readFile func(string) ([]byte, error)) (int64, error) {
	n, share, err := parseMemoryLimit(s)
	if err != nil || share == 0 {
		return n, err
	}
	avail, err := AvailableMemory(readFile)
	if err != nil {
		return 0, fmt.Errorf("memory_limit %q: %w", s, err)
	}
	return int64(float64(avail) * share), nil
}

// parseMemoryLimit parses a memory_limit setting into either a number of
// bytes or a share (0 < share <= 1) of the available memory.
func parseMemoryLimit(s string) (n int64, share float64, err error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return math.MaxInt64, 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(pct > 0 && pct <= 100) {
			return 0, 0, fmt.Errorf("memory_limit %q: a share must be more than 0%% and at most 100%%", s)
		}
		return 0, pct / 100, nil
	}
	if n, err = ParseBytes(s); err != nil {
		return 0, 0, fmt.Errorf("memory_limit: %w", err)
	}
	if n < 64<<20 {
		return 0, 0, fmt.Errorf("memory_limit %q: must be at least 64MiB", s)
	}
	return n, 0, nil
}

// ParseBytes parses a byte size: an integer with an optional unit B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := strings.TrimSpace(s[:i]), strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a byte size (e.g. 512MiB, 2GB, 1073741824)", s)
	}
	return n * mult, nil
}

// AvailableMemory is the memory the process may use: the lower of the
// machine's (MemTotal in /proc/meminfo) and its cgroup's limit (v2
// memory.max or v1 memory.limit_in_bytes), read with readFile.
func AvailableMemory(readFile func(string) ([]byte, error)) (int64, error) {
	b, err := readFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("machine memory: %w", err)
	}
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0, fmt.Errorf("machine memory: MemTotal %q", f[1])
			}
			total = kb << 10
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("machine memory: no MemTotal in /proc/meminfo")
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := readFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total = n // "max" or a v1 "unlimited" (a huge number) leave it
		}
	}
	return total, nil
}

// GCTuneTarget is the GC percentage auto sets for a live heap of live bytes
// and a headroom: the heap may grow by headroom above the live data, but
// by no less than the live data (100) and no more than four times it (400).
func GCTuneTarget(live, headroom uint64) int {
	if live == 0 {
		return gcAutoMax
	}
	pct := headroom * 100 / live
	return int(min(max(pct, gcAutoMin), gcAutoMax))
}

// GCTuneLimit is the soft memory limit auto sets for a live heap of live
// bytes: the heap room GCTuneTarget allows (the larger of the live heap and
// headroom) above the live heap, plus slack for what the runtime counts
// besides the heap (stacks, GC metadata, fragmentation: 32 MiB and an
// eighth of the live heap), never above ceiling.
func GCTuneLimit(live, headroom uint64, ceiling int64) int64 {
	if live > math.MaxInt64/4 || headroom > math.MaxInt64/4 {
		return ceiling
	}
	want := live + max(live, headroom) + 32<<20 + live/8
	if int64(want) > ceiling {
		return ceiling
	}
	return int64(want)
}

// StartGCTuner, after every collection, sets the GC percentage from the
// live heap the collection measured (GCTuneTarget with headroom) and, unless
// ceiling is negative, the soft memory limit (GCTuneLimit, at most ceiling):
// the percentage alone would let a sudden rise of the live heap grow the
// heap by four times the rise before the next collection retunes it; the
// limit makes the collector run early instead. Each is changed only when it
// moves by a tenth or more. It returns a function that stops the tuning and
// puts the limit back at ceiling. It hooks collections with a cleanup on a
// sentinel object that is re-armed each time, so it costs nothing between
// collections.
func StartGCTuner(headroom uint64, ceiling int64) (stop func()) {
	t := &gcTuner{headroom: headroom, ceiling: ceiling, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.set(gcAutoMax) // before the first cleanup is armed: no concurrent use
	t.arm()
	return func() {
		t.stopped.Store(true)
		if ceiling >= 0 {
			debug.SetMemoryLimit(ceiling)
		}
	}
}

type gcTuner struct {
	headroom  uint64
	ceiling   int64 // the configured soft limit; negative: do not manage the limit
	stopped   atomic.Bool
	sample    []metrics.Sample // and last, lastLimit: used by cleanups only, which run one at a time
	last      int
	lastLimit int64
}

// sentinel is the object whose collection signals a finished GC cycle; its
// size keeps it out of the tiny allocator (whose blocks are freed late).
type sentinel [32]uint64

func (t *gcTuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *gcTuner) { t.tune() }, t)
}

// tune reads the live heap and sets the percentage and limit, then re-arms.
func (t *gcTuner) tune() {
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	pct := GCTuneTarget(live, t.headroom)
	if d := pct - t.last; d*10 >= t.last || -d*10 >= t.last {
		t.set(pct)
	}
	if t.ceiling >= 0 && live > 0 {
		limit := GCTuneLimit(live, t.headroom, t.ceiling)
		if d := limit - t.lastLimit; d*10 >= t.lastLimit || -d*10 >= t.lastLimit {
			debug.SetMemoryLimit(limit)
			t.lastLimit = limit
		}
	}
	t.arm()
}

func (t *gcTuner) set(pct int) {
	debug.SetGCPercent(pct)
	t.last = pct
}
