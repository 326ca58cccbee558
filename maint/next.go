package maint

import (
	"slices"
	"time"

	"github.com/floe-lake/floe/catalog"
)

// NextRun is when the background scheduler next runs one job on a table.
type NextRun struct {
	Job string `json:"job"`
	// At is the start of the scheduler tick at which the job is next due;
	// the run starts then or shortly after (the scheduler's workers take
	// the table's jobs in a random order).
	At time.Time `json:"at"`
	// Every is how often the job runs on the table (its policy's interval,
	// at least the scheduler's tick).
	Every string `json:"every"`
}

// maxLookahead bounds the ticks NextRuns looks at per job.
const maxLookahead = 1 << 20

// NextRuns returns, for each of jobs the table's policy p enables, the start
// of the next scheduler tick after now at which the job is due, soonest
// first. interval is the scheduler's tick; jobs are the names of the jobs the
// scheduler runs (a job not among them never runs in the background). It
// reproduces the scheduler's own decision (the job's Due): a job whose
// interval is longer than the tick runs at the ticks the table's name
// hashes to.
func NextRuns(p Policy, wh string, id catalog.Ident, jobs []string, interval time.Duration, lifecycle bool, now time.Time) []NextRun {
	if interval <= 0 {
		return nil
	}
	key := TableRef{Warehouse: wh, Ident: id}.String()
	tick := now.UnixNano() / int64(interval)
	var out []NextRun
	for _, job := range jobs {
		var enabled bool
		every := interval
		switch job {
		case ExpireSnapshotsJob:
			enabled = p.ExpireEnabled
		case CompactJob:
			enabled, every = p.CompactionEnabled, p.CompactionInterval
		case ManifestsJob:
			enabled, every = p.ManifestsEnabled, p.ManifestsInterval
		case OrphansJob:
			enabled, every = p.OrphanEnabled, p.OrphanInterval
		case LifecycleJob:
			enabled, every = lifecycle && p.ColdAfter > 0, p.LifecycleInterval
		}
		if !enabled {
			continue
		}
		every = max(every, interval)
		for t := tick + 1; t <= tick+maxLookahead; t++ {
			if due(t, interval, every, key) {
				out = append(out, NextRun{Job: job, At: time.Unix(0, t*int64(interval)).UTC(), Every: every.String()})
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b NextRun) int { return a.At.Compare(b.At) })
	return out
}
