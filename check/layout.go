package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Table layout thresholds (S6).
const (
	// SmallFileFailCount and SmallFileWarnCount are data-file counts from
	// which a table whose average data file is under SmallFileSize fails
	// (or warns).
	SmallFileFailCount = 1000
	SmallFileWarnCount = 500
	// SmallFileSize is the average data-file size below which files count as small.
	SmallFileSize = 32 << 20
	// LargeUnpartitioned is the size from which an unpartitioned table warns.
	LargeUnpartitioned = 1 << 30
	// MaxSnapshots is the snapshot count above which a table warns.
	MaxSnapshots = 500
)

func summaryInt(s map[string]string, k string) int64 {
	n, _ := strconv.ParseInt(s[k], 10, 64)
	return n
}

// checkPartitioning (S6): large tables are partitioned.
func (r *run) checkPartitioning(context.Context) {
	if len(r.tables) == 0 {
		r.add("S6", "s6.partitioning", Skip, "no table loaded")
		return
	}
	var big, parts []string
	for _, t := range r.tables {
		n := 0
		for _, s := range t.metadata.PartitionSpecs {
			if s.SpecID == t.metadata.DefaultSpecID {
				n = len(s.Fields)
			}
		}
		size := summaryInt(t.metadata.currentSummary(), "total-files-size")
		if n == 0 && size >= LargeUnpartitioned {
			big = append(big, fmt.Sprintf("%s (%d MiB)", t, size>>20))
		}
		parts = append(parts, fmt.Sprintf("%s: %d fields", t, n))
	}
	if len(big) > 0 {
		r.add("S6", "s6.partitioning", Warn, "unpartitioned and ≥ %d GiB: %s", LargeUnpartitioned>>30, strings.Join(big, ", "))
		return
	}
	r.add("S6", "s6.partitioning", Pass, "partition specs: %s (unpartitioned tables are under %d GiB)", strings.Join(parts, "; "), LargeUnpartitioned>>30)
}

// checkSmallFiles (S6): the current snapshot's summary (total-data-files,
// total-files-size) shows no pile of small files.
func (r *run) checkSmallFiles(context.Context) {
	if len(r.tables) == 0 {
		r.add("S6", "s6.small-files", Skip, "no table loaded")
		return
	}
	worst, worstTable := Pass, ""
	var ev []string
	for _, t := range r.tables {
		s := t.metadata.currentSummary()
		files, size := summaryInt(s, "total-data-files"), summaryInt(s, "total-files-size")
		if files == 0 {
			ev = append(ev, t.String()+": no data files")
			continue
		}
		avg := size / files
		st := Pass
		switch {
		case files >= SmallFileFailCount && avg < SmallFileSize:
			st = Fail
		case files >= SmallFileWarnCount && avg < SmallFileSize:
			st = Warn
		}
		line := fmt.Sprintf("%s: %d files, average %s", t, files, bytesString(avg))
		if st != Pass && (worst == Pass || st == Fail) {
			worst, worstTable = st, line
		}
		ev = append(ev, line)
	}
	if worst != Pass {
		r.add("S6", "s6.small-files", worst, "%s (threshold: ≥ %d files averaging < %s fail, ≥ %d warn)", worstTable, SmallFileFailCount, bytesString(SmallFileSize), SmallFileWarnCount)
		return
	}
	r.add("S6", "s6.small-files", Pass, "%s", strings.Join(ev, "; "))
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// checkSnapshots (S6): snapshots are expired (at most MaxSnapshots).
func (r *run) checkSnapshots(context.Context) {
	if len(r.tables) == 0 {
		r.add("S6", "s6.snapshots", Skip, "no table loaded")
		return
	}
	most, which := 0, ""
	for _, t := range r.tables {
		if n := len(t.metadata.Snapshots); n >= most {
			most, which = n, t.String()
		}
	}
	if most > MaxSnapshots {
		r.add("S6", "s6.snapshots", Warn, "%s keeps %d snapshots (> %d)", which, most, MaxSnapshots)
		return
	}
	r.add("S6", "s6.snapshots", Pass, "at most %d snapshots (%s; threshold %d)", most, which, MaxSnapshots)
}

// floeSummary asks Floe's management API for a table's maintenance summary.
func (r *run) floeSummary(ctx context.Context, t *tableLoad) (map[string]json.RawMessage, answer) {
	wh := r.prefix
	p := "/api/v1/tables/" + url.PathEscape(wh) + "/" + url.PathEscape(strings.Join(t.ns, ".")) + "/" + url.PathEscape(t.name) + "/summary"
	a := r.call(ctx, r.token, http.MethodGet, p, nil)
	var m map[string]json.RawMessage
	if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &m) != nil {
		return nil, a
	}
	return m, a
}

// checkCompaction (S6, Floe only): the maintenance policy compacts.
func (r *run) checkCompaction(ctx context.Context) {
	if !r.floe {
		r.add("S6", "s6.compaction", Skip, "not a Floe server: compaction policy is not visible through the REST spec")
		return
	}
	if len(r.tables) == 0 {
		r.add("S6", "s6.compaction", Skip, "no table loaded")
		return
	}
	var off, on []string
	for _, t := range r.tables {
		m, a := r.floeSummary(ctx, t)
		if m == nil {
			r.add("S6", "s6.compaction", Skip, "Floe's table summary of %s: %s", t, a.describe())
			return
		}
		var pol struct {
			Compaction bool `json:"compaction_enabled"`
		}
		_ = json.Unmarshal(m["policy"], &pol)
		if pol.Compaction {
			on = append(on, t.String())
		} else {
			off = append(off, t.String())
		}
	}
	if len(off) > 0 {
		r.add("S6", "s6.compaction", Warn, "compaction is off for %s", strings.Join(off, ", "))
		return
	}
	r.add("S6", "s6.compaction", Pass, "compaction enabled for %s", strings.Join(on, ", "))
}

// checkLifecycle (S6, Floe only): lifecycle tiering is configured
// (floe.lifecycle.cold-after on the table or its namespace).
func (r *run) checkLifecycle(ctx context.Context) {
	if !r.floe {
		r.add("S6", "s6.lifecycle", Skip, "not a Floe server: lifecycle rules are not visible through the REST spec")
		return
	}
	if len(r.tables) == 0 {
		r.add("S6", "s6.lifecycle", Skip, "no table loaded")
		return
	}
	var off, on []string
	for _, t := range r.tables {
		v := t.metadata.Properties["floe.lifecycle.cold-after"]
		if v == "" {
			a := r.call(ctx, r.token, http.MethodGet, r.path("/namespaces/"+nsPath(t.ns)), nil)
			var ns struct {
				Properties map[string]string `json:"properties"`
			}
			if a.err == nil && a.status == http.StatusOK && json.Unmarshal(a.body, &ns) == nil {
				v = ns.Properties["floe.lifecycle.cold-after"]
			}
		}
		if v == "" || v == "0" || v == "off" {
			off = append(off, t.String())
		} else {
			on = append(on, t.String()+" cold-after "+v)
		}
	}
	if len(off) > 0 {
		r.add("S6", "s6.lifecycle", Warn, "no lifecycle tiering (floe.lifecycle.cold-after) on %s", strings.Join(off, ", "))
		return
	}
	r.add("S6", "s6.lifecycle", Pass, "%s", strings.Join(on, ", "))
}
