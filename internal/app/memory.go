package app

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Memory defaults. The garbage collector's percentage was chosen by
// measurement (docs/operations.md, "Memory"): 100, Go's own default, keeps
// the heap at most twice the live data; the 400 Floe used before let it
// grow to five times and was most of an 18 GiB RSS after 2,400 appends.
const (
	// DefaultGCPercent is the GOGC Floe runs with unless GOGC or gc_percent says otherwise.
	DefaultGCPercent = 100
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
	// GCPercent is the collector's percentage; GCFrom says where it came from.
	GCPercent int
	GCFrom    string
}

// ApplyMemory sets the Go runtime's soft memory limit and GC percentage for
// a serving process and logs them. GOMEMLIMIT and GOGC in the environment
// win over cfg (the runtime has applied them already); otherwise
// cfg.MemoryLimit and cfg.GCPercent are applied. It changes process-wide
// state, so only `floe serve` calls it, never a library or a test server.
func ApplyMemory(cfg Config, getenv func(string) string, log *slog.Logger) (MemorySettings, error) {
	var s MemorySettings
	if cfg.GCPercent < -1 || cfg.GCPercent == 0 {
		return s, fmt.Errorf("gc_percent %d: must be positive, or -1 (collect only at the memory limit)", cfg.GCPercent)
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
		debug.SetGCPercent(cfg.GCPercent)
	}
	attrs := []any{"gc_percent", s.GCPercent, "gc_percent_from", s.GCFrom, "memory_limit_from", s.LimitFrom}
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
