package maint

import (
	"testing"
	"time"

	"github.com/floe-lake/floe/catalog"
)

// TestNextRuns: the next run of each enabled job is the first later tick
// the scheduler's own due() accepts, no earlier tick is; disabled jobs and
// jobs the scheduler does not run are left out; no scheduler, no runs.
func TestNextRuns(t *testing.T) {
	interval := time.Minute
	now := time.Date(2026, 12, 4, 20, 0, 30, 0, time.UTC)
	id := catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "opportunities"}
	key := "wh/crm.opportunities"
	p := DefaultPolicy(Retention{MaxAge: time.Hour})
	p.ColdAfter = 0
	all := []string{ExpireSnapshotsJob, CompactJob, ManifestsJob, OrphansJob, LifecycleJob}
	tests := []struct {
		name string
		p    func(Policy) Policy
		jobs []string
		want []string // jobs, soonest first
	}{
		{"defaults", func(p Policy) Policy { return p }, all, nil},
		{"compaction off", func(p Policy) Policy { p.CompactionEnabled = false; return p }, all, nil},
		{"only expire scheduled", func(p Policy) Policy { return p }, []string{ExpireSnapshotsJob}, []string{ExpireSnapshotsJob}},
		{"lifecycle on", func(p Policy) Policy { p.ColdAfter = time.Hour; return p }, []string{LifecycleJob}, []string{LifecycleJob}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := tt.p(p)
			runs := NextRuns(pol, "wh", id, tt.jobs, interval, true, now)
			seen := map[string]bool{}
			for i, r := range runs {
				seen[r.Job] = true
				if i > 0 && r.At.Before(runs[i-1].At) {
					t.Errorf("runs not soonest first: %+v", runs)
				}
				every, err := time.ParseDuration(r.Every)
				if err != nil {
					t.Fatal(err)
				}
				tick := r.At.UnixNano() / int64(interval)
				if !r.At.After(now) || r.At.UnixNano()%int64(interval) != 0 || !due(tick, interval, every, key) {
					t.Errorf("%s at %v: not a later tick start the scheduler would run it at", r.Job, r.At)
				}
				for t0 := now.UnixNano()/int64(interval) + 1; t0 < tick; t0++ {
					if due(t0, interval, every, key) {
						t.Errorf("%s: due already at tick %d, before %v", r.Job, t0, r.At)
					}
				}
			}
			for _, j := range tt.jobs {
				on := map[string]bool{ExpireSnapshotsJob: pol.ExpireEnabled, CompactJob: pol.CompactionEnabled, ManifestsJob: pol.ManifestsEnabled,
					OrphansJob: pol.OrphanEnabled, LifecycleJob: pol.ColdAfter > 0}[j]
				if seen[j] != on {
					t.Errorf("job %s listed %v, enabled %v: %+v", j, seen[j], on, runs)
				}
			}
			if tt.want != nil && (len(runs) != len(tt.want) || runs[0].Job != tt.want[0]) {
				t.Errorf("runs %+v, want %v", runs, tt.want)
			}
		})
	}
	if got := NextRuns(p, "wh", id, all, 0, true, now); got != nil {
		t.Errorf("no scheduler tick: %+v", got)
	}
	if got := NextRuns(p, "wh", id, nil, interval, true, now); got != nil {
		t.Errorf("no scheduled jobs: %+v", got)
	}
	// The expiry job runs every tick: its next run is the next minute.
	runs := NextRuns(p, "wh", id, []string{ExpireSnapshotsJob}, interval, true, now)
	if len(runs) != 1 || !runs[0].At.Equal(time.Date(2026, 12, 4, 20, 1, 0, 0, time.UTC)) {
		t.Errorf("expire: %+v, want 20:01:00", runs)
	}
}
